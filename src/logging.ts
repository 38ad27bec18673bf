import { writeSync } from 'node:fs';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/**
 * The process's logger. `json` is pino's own output, untouched (what log collectors and the tests
 * that read a child's logs expect). `pretty` turns each record into one short line a person reads
 * in a terminal: `12:04:31 WARN Redis is not answering yet ... err="connect ECONNREFUSED"`.
 */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  out: { write(text: string): unknown } = process.stdout,
): Logger {
  const options = { level: config.logLevel, base: { service: 'outdial' } };
  return config.logFormat === 'pretty' ? pino(options, lineDestination(out)) : pino(options, stdoutRecords());
}

let stdoutWriter: TurnWriter | undefined;

/** Writes the JSON log's pending records now: the CLI does before its own lines, to keep their order. */
export function flushStdoutLog(): void {
  stdoutWriter?.flush();
}

/** The one writer of the JSON log to stdout, flushed when the process exits. */
function stdoutRecords(): TurnWriter {
  if (!stdoutWriter) {
    const writer = new TurnWriter(1);
    process.once('exit', () => writer.flush());
    stdoutWriter = writer;
  }
  return stdoutWriter;
}

/**
 * Writes the records of one event-loop turn together, in one write, when the turn ends. At info a
 * request logs two records: through pino's own stdout, a write call each, they cost 7.0 µs a
 * request, 4.9 of them the writes; written a turn at a time 2.7 µs (measured alone, to a file).
 * pino's background mode (`sync: false`) cost 8.0-8.7 µs: it measures the whole pending buffer
 * again at every record (docs/benchmarks.md, issue 23). The write is synchronous like pino's, so
 * records keep their order with the rest of stdout once flushed; `flush()` (pino's
 * `logger.flush()`) writes what is pending at once.
 */
export class TurnWriter implements DestinationStream {
  private pending: string[] = [];
  private scheduled = false;
  /** The reader went away (EPIPE): records are dropped, as pino does. */
  private closed = false;

  constructor(private readonly fd: number) {}

  write(record: string): void {
    if (this.closed) return;
    this.pending.push(record);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.writePending);
    }
  }

  flush(done?: (error?: Error) => void): void {
    this.writePending();
    done?.();
  }

  private readonly writePending = (): void => {
    this.scheduled = false;
    if (this.pending.length === 0 || this.closed) return;
    const data = Buffer.from(this.pending.join(''));
    this.pending = [];
    let offset = 0;
    while (offset < data.length) {
      try {
        offset += writeSync(this.fd, data, offset);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') {
          this.closed = true;
          return;
        }
        if (code !== 'EAGAIN') throw error;
        // A full pipe (stdout non-blocking): wait for its reader, as pino's synchronous stdout did.
        Atomics.wait(PAUSE, 0, 0, 10);
      }
    }
  };
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Reads pino's JSON back and writes the line. In-process and synchronous: no worker thread and no
 * pino-pretty. Parsing again costs a few microseconds a record, nothing beside a request's own time.
 */
export function lineDestination(out: { write(text: string): unknown }): DestinationStream {
  return {
    write(json: string) {
      let record: unknown;
      try {
        record = JSON.parse(json);
      } catch {
        out.write(json);
        return;
      }
      out.write(`${formatLogLine(record as Record<string, unknown>)}\n`);
    },
  };
}

/** info is the usual level and goes unnamed; the others stand out. */
const LEVEL_LABELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/**
 * What a line leaves out: what every record carries (the process, the time as a number) and the
 * request id, which would repeat on every request line and mean nothing to the reader.
 */
const LEFT_OUT = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'reqId']);

/** A field's value longer than this is cut: a line stays a line. */
const MAX_VALUE_CHARS = 120;

/** One record as one line: local time, the level unless info, the message, then key=value fields. */
export function formatLogLine(record: Record<string, unknown>): string {
  const time = typeof record.time === 'number' ? new Date(record.time) : new Date();
  const parts = [clock(time)];
  const label = LEVEL_LABELS[typeof record.level === 'number' ? record.level : 30];
  if (label) parts.push(label);
  if (typeof record.msg === 'string' && record.msg !== '') parts.push(record.msg);
  for (const [key, value] of Object.entries(record)) {
    if (LEFT_OUT.has(key) || value === undefined) continue;
    parts.push(`${key}=${fieldValue(key, value)}`);
  }
  return parts.join(' ');
}

function clock(time: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}`;
}

function fieldValue(key: string, value: unknown): string {
  // pino's error serializer gives {type, message, stack, code?}: the message (and code) is the
  // line's; the stack is in the JSON format (LOG_FORMAT=json).
  if ((key === 'err' || key === 'error') && value !== null && typeof value === 'object') {
    const { message, code } = value as { message?: unknown; code?: unknown };
    if (typeof message === 'string') {
      return quoted(typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message);
    }
  }
  if (typeof value === 'string') return quoted(value);
  if (value === null || typeof value !== 'object') return String(value);
  return cut(JSON.stringify(value));
}

/** Bare when the value reads unambiguously after `key=`, else in JSON quotes. */
function quoted(text: string): string {
  const short = cut(text);
  return /^[^\s"=]+$/.test(short) ? short : JSON.stringify(short);
}

function cut(text: string): string {
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}
