import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, ROOT } from './process.js';
import { maxInWindow } from './rate.js';

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
  options: {
    calls?: number;
    cwd?: string;
    messageLog?: string;
    timeoutSeconds?: number;
    /** Values for [keyword]s of the scenario (sipp's -key). */
    keys?: Record<string, string>;
    /** More of sipp's options (e.g. `-3pcc`). */
    args?: string[];
    /** sipp's SIP port (a far end started again where it was); default a free one. */
    port?: number;
  } = {},
): Promise<Sipp> {
  // A free port can be taken by another process (the SIP provider under test binds port 0)
  // between our check and sipp's bind: sipp then exits at once, and is started again on another.
  // A port the caller chose is not changed: sipp is started again on it.
  for (let attempt = 1; ; attempt++) {
    const started = await startSippOnce(scenario, options);
    if (started.bound || attempt === 5) return started.sipp;
  }
}

async function startSippOnce(
  scenario: string,
  options: Parameters<typeof startSipp>[1] & object,
): Promise<{ sipp: Sipp; bound: boolean }> {
  const port = options.port ?? (await freePort());
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
      ...Object.entries(options.keys ?? {}).flatMap(([key, value]) => ['-key', key, value]),
      ...(options.args ?? []),
    ],
    { stdio: 'ignore', ...(options.cwd ? { cwd: options.cwd } : {}) },
  );
  const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // sipp opens its socket a moment after it starts (over a second on a loaded machine): wait for
  // its own socket on the port, or for its exit (its code then tells the test what went wrong).
  const deadline = Date.now() + 30_000;
  while (child.exitCode === null && child.signalCode === null) {
    if (child.pid !== undefined && udpBoundBy(child.pid, port))
      return { sipp: { port, done, child }, bound: true };
    if (Date.now() > deadline)
      throw new Error(`sipp (${scenario}) did not open UDP port ${port} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { sipp: { port, done, child }, bound: false };
}

/** The inodes of the UDP sockets of this machine bound to `port` (Linux: /proc/net/udp and udp6). */
function udpInodes(port: number): string[] {
  const suffix = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return ['/proc/net/udp', '/proc/net/udp6'].flatMap((table) => {
    const lines = fs.existsSync(table) ? fs.readFileSync(table, 'utf8').split('\n').slice(1) : [];
    return lines
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[1]?.endsWith(suffix) === true)
      .map((fields) => fields[9] ?? '');
  });
}

/** True when process `pid` itself holds a UDP socket bound to `port`. */
function udpBoundBy(pid: number, port: number): boolean {
  const inodes = new Set(udpInodes(port).map((inode) => `socket:[${inode}]`));
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      return inodes.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      return false;
    }
  });
}

/** From sipp's message log: how many calls it saw, the most up at once, and INVITEs in any second. */
export function carrierLoad(messageLog: string): { calls: number; peak: number; invitesPerSecond: number } {
  const spans = [...callsInLog(messageLog).values()];
  return {
    calls: spans.length,
    peak: Math.max(
      ...spans.map((span) => spans.filter((o) => o.start <= span.start && span.start < o.end).length),
    ),
    invitesPerSecond: maxInWindow(
      spans.map((span) => span.start),
      1000,
    ),
  };
}

/** One SIP message of sipp's message log. */
export interface LoggedMessage {
  /** Wall-clock ms sipp logged it at. */
  at: number;
  /** True for what sipp sent, false for what it received. */
  sent: boolean;
  /** The request line or status line. */
  startLine: string;
  /** The message's text from its start line on. */
  text: string;
  /** A header's value ('' when absent). */
  header(name: string): string;
}

/** Every SIP message of sipp's message log, where each follows a line with its date and time. */
export function sipMessages(messageLog: string): LoggedMessage[] {
  const log = fs.readFileSync(messageLog, 'latin1');
  const entries = log.split(/^-{5,} (\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\.\d+)/m);
  const messages: LoggedMessage[] = [];
  for (let i = 1; i < entries.length; i += 2) {
    const entry = entries[i + 1] ?? '';
    // Skip sipp's own twin-socket (3PCC) messages.
    const kind = /^\s*UDP message (sent|received)/.exec(entry);
    if (!kind) continue;
    const text = entry.slice(entry.indexOf('\n', kind.index + 1) + 1).replace(/^\s+/, '');
    messages.push({
      at: Date.parse(`${(entries[i] ?? '').replace(/\s+/, 'T').slice(0, 23)}Z`),
      sent: kind[1] === 'sent',
      startLine: text.split(/\r?\n/, 1)[0] ?? '',
      text,
      header: (name) => new RegExp(`^${name}:[ \\t]*(.*?)\\s*$`, 'im').exec(text)?.[1] ?? '',
    });
  }
  return messages;
}

/** Per Call-ID, when the INVITE arrived and when the call ended (its BYE), in ms. */
function callsInLog(messageLog: string): Map<string, { start: number; end: number }> {
  const calls = new Map<string, { start: number; end: number }>();
  for (const message of sipMessages(messageLog)) {
    const callId = message.header('Call-ID');
    if (!callId) continue;
    const span = calls.get(callId) ?? { start: Number.POSITIVE_INFINITY, end: 0 };
    if (message.startLine.startsWith('INVITE sip:')) span.start = Math.min(span.start, message.at);
    if (message.startLine.startsWith('BYE sip:')) span.end = Math.max(span.end, message.at);
    calls.set(callId, span);
  }
  for (const [id, span] of calls) if (!Number.isFinite(span.start)) calls.delete(id);
  return calls;
}
