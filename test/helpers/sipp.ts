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

/** From sipp's message log: how many calls it saw, the most up at once, and INVITEs in any second. */
export function carrierLoad(messageLog: string): { calls: number; peak: number; invitesPerSecond: number } {
  const spans = [...callsInLog(fs.readFileSync(messageLog, 'utf8')).values()];
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

/**
 * Per Call-ID, when the INVITE arrived and when the call ended (its BYE), in ms, from sipp's
 * message log, where each message follows a line with its date and time.
 */
function callsInLog(log: string): Map<string, { start: number; end: number }> {
  const calls = new Map<string, { start: number; end: number }>();
  const entries = log.split(/^-{5,} (\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\.\d+)/m);
  for (let i = 1; i < entries.length; i += 2) {
    const at = Date.parse(`${(entries[i] ?? '').replace(/\s+/, 'T').slice(0, 23)}Z`);
    const text = entries[i + 1] ?? '';
    const callId = /^Call-ID:\s*(\S+)/im.exec(text)?.[1];
    if (!callId) continue;
    const span = calls.get(callId) ?? { start: Number.POSITIVE_INFINITY, end: 0 };
    if (/^INVITE sip:/m.test(text)) span.start = Math.min(span.start, at);
    if (/^BYE sip:/m.test(text)) span.end = Math.max(span.end, at);
    calls.set(callId, span);
  }
  for (const [id, span] of calls) if (!Number.isFinite(span.start)) calls.delete(id);
  return calls;
}
