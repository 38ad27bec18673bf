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
  return config.logFormat === 'pretty' ? pino(options, lineDestination(out)) : pino(options);
}

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
