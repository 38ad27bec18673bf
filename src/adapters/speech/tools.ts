/**
 * Running the offline speech tools (espeak-ng and pocketsphinx): spawning one without a shell,
 * with a timeout and a cap on its output, the error that names the tool, whether they are
 * installed, and a semaphore for how many may run at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../../domain/errors.js';

export const ESPEAK = 'espeak-ng';
export const POCKETSPHINX = 'pocketsphinx_continuous';
/** Where Debian's pocketsphinx-en-us (0.8+5prealpha) puts the model. */
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export type SpeechTool = typeof ESPEAK | typeof POCKETSPHINX;
export type SpeechToolFailure = 'missing' | 'failed' | 'timeout';

/** A speech tool that is not installed, exited with an error, or ran past its timeout. */
export class SpeechToolError extends AppError {
  override name = 'SpeechToolError';
  constructor(
    readonly tool: SpeechTool,
    readonly reason: SpeechToolFailure,
    message: string,
  ) {
    super('PROVIDER_ERROR', `${tool}: ${message}`, { tool, reason });
  }
}

export interface ToolRun {
  tool: SpeechTool;
  args: string[];
  /** Written to the tool's stdin; without it, stdin is closed. */
  input?: Buffer;
  timeoutMs: number;
}

/** Stdout larger than this is a runaway tool: 64 MB is 25 minutes of espeak-ng's 22 kHz audio. */
const MAX_STDOUT_BYTES = 64 * 1024 * 1024;
/** Only the end of stderr is kept, for the error message. */
const STDERR_TAIL = 2000;

/** Runs a tool without a shell, feeding `input` on stdin, and collects its stdout. */
export function runTool({ tool, args, input, timeoutMs }: ToolRun): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: SpeechToolError | undefined;
    const fail = (reason: SpeechToolFailure, message: string) => {
      failure ??= new SpeechToolError(tool, reason, message);
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => fail('timeout', `no result within ${timeoutMs} ms`), timeoutMs);

    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        error.code === 'ENOENT'
          ? new SpeechToolError(tool, 'missing', 'not installed (not found on PATH)')
          : new SpeechToolError(tool, 'failed', error.message),
      );
    });
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_STDOUT_BYTES) fail('failed', `output over ${MAX_STDOUT_BYTES} bytes`);
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL);
    });
    // The tool may exit before reading all of its input (EPIPE): its exit status tells what happened.
    child.stdin.on('error', () => {});
    if (input) child.stdin.end(input);
    else child.stdin.end();

    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else if (code !== 0) {
        const detail = stderr.trim().split('\n').slice(-3).join(' | ');
        const status = signal ? `killed by ${signal}` : `exited with ${code}`;
        reject(new SpeechToolError(tool, 'failed', detail ? `${status}: ${detail}` : status));
      } else resolve(Buffer.concat(chunks));
    });
  });
}

/**
 * Whether the tool starts, found as spawn finds it (through PATH). Both print their usage or
 * version and exit within milliseconds; only "not found" matters, not the exit status.
 */
function installed(tool: SpeechTool): boolean {
  const probe = spawnSync(tool, tool === ESPEAK ? ['--version'] : [], { stdio: 'ignore', timeout: 5000 });
  return (probe.error as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT';
}

export interface ModelFiles {
  hmm: string;
  lm: string;
  dict: string;
}

export function modelFiles(modelDir: string): ModelFiles {
  return {
    hmm: path.join(modelDir, 'en-us'),
    lm: path.join(modelDir, 'en-us.lm.bin'),
    dict: path.join(modelDir, 'cmudict-en-us.dict'),
  };
}

export interface SpeechToolsStatus {
  espeak: boolean;
  pocketsphinx: boolean;
  /** What to install, e.g. 'espeak-ng' or 'pocketsphinx-en-us (/usr/share/pocketsphinx/model/en-us)'. */
  missing: string[];
}

/** Whether espeak-ng and pocketsphinx (with its en-us model) are installed. */
export function speechToolsAvailable(options: { modelDir?: string } = {}): SpeechToolsStatus {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const missing: string[] = [];
  const espeak = installed(ESPEAK);
  if (!espeak) missing.push(ESPEAK);
  const binary = installed(POCKETSPHINX);
  if (!binary) missing.push(`pocketsphinx (${POCKETSPHINX})`);
  const model = Object.values(modelFiles(modelDir)).every((file) => fs.existsSync(file));
  if (!model) missing.push(`pocketsphinx-en-us (${modelDir})`);
  return { espeak, pocketsphinx: binary && model, missing };
}

/** Counts permits; callers past the limit wait in order of arrival. */
export class Semaphore {
  #limit: number;
  #active = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    this.#limit = Semaphore.#check(limit);
  }

  static #check(limit: number): number {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`Semaphore: limit ${limit}`);
    return limit;
  }

  get limit(): number {
    return this.#limit;
  }

  /** A higher limit starts waiters at once; a lower one takes effect as running tasks finish. */
  set limit(limit: number) {
    this.#limit = Semaphore.#check(limit);
    while (this.#active < this.#limit && this.#waiting.length > 0) {
      this.#active++;
      this.#waiting.shift()?.();
    }
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #release(): void {
    // While under the limit the permit passes straight to the next waiter.
    const next = this.#active <= this.#limit ? this.#waiting.shift() : undefined;
    if (next) next();
    else this.#active--;
  }
}
