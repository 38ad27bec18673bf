import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { freePort, ROOT } from './process.js';

export interface Sipp {
  /** sipp's SIP port on 127.0.0.1. */
  port: number;
  /** Resolves with sipp's exit code: 0 when every call followed the scenario. */
  done: Promise<number | null>;
  child: ChildProcess;
}

/**
 * Starts sipp (Debian's sip-tester) on loopback as the far end, with a scenario of
 * test/fixtures/sipp, for `calls` calls. `cwd` is where the scenario's audio files are;
 * `messageLog` makes sipp log every message it sends and receives, with times.
 */
export async function startSipp(
  scenario: string,
  options: { calls?: number; cwd?: string; messageLog?: string; timeoutSeconds?: number } = {},
): Promise<Sipp> {
  const port = await freePort();
  const mediaPort = 2 * Math.floor((await freePort()) / 2);
  const child = spawn(
    'sipp',
    [
      ...['-sf', path.join(ROOT, 'test/fixtures/sipp', `${scenario}.xml`)],
      ...['-i', '127.0.0.1', '-p', String(port), '-mi', '127.0.0.1', '-mp', String(mediaPort)],
      ...[
        '-m',
        String(options.calls ?? 1),
        '-nostdin',
        '-timeout',
        `${options.timeoutSeconds ?? 30}s`,
        '-timeout_error',
      ],
      ...(options.messageLog ? ['-trace_msg', '-message_file', options.messageLog] : []),
    ],
    { stdio: 'ignore', ...(options.cwd ? { cwd: options.cwd } : {}) },
  );
  const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // sipp needs a moment to open its socket.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { port, done, child };
}
