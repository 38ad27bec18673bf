import dgram from 'node:dgram';
import net from 'node:net';
import os from 'node:os';
import { newBranch, newCallId, newTag, parseMessage, serialize } from './message.js';

/**
 * A SIP OPTIONS ping (RFC 3261 11): is a trunk there? One request from an ephemeral UDP socket of
 * its own (not the SIP transport's), retransmitted on timer E until a response or the timeout.
 * The circuit breakers' probes (adapters/probes.ts) and `outdial doctor` use it.
 */

/** RFC 3261's T1 and T2: timer E starts at T1 and doubles up to T2. */
const T1_MS = 500;
const T2_MS = 4000;

/** What `sipOptions` asks. */
export interface SipOptionsTarget {
  host: string;
  port: number;
}

/** The first response: its status line and how long it took from the first send. */
export interface SipOptionsAnswer {
  status: number;
  reason: string;
  latencyMs: number;
}

/** Nothing answered the OPTIONS (every retransmission went unanswered), or it could not be sent. */
export class SipOptionsError extends Error {
  override name = 'SipOptionsError';
}

export interface SipOptionsSettings {
  /** How long to wait for a response in all. Default 4000 (timer E reaches T2 by then). */
  timeoutMs?: number;
  /** The address shown in Via and From (the SIP public address); default: this host's, see below. */
  address?: string;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The address a host far away sees: loopback for a local target, else the first public IPv4. */
function localAddressFor(host: string): string {
  if (isLoopback(host)) return host === '::1' ? '::1' : '127.0.0.1';
  for (const addresses of Object.values(os.networkInterfaces())) {
    const found = addresses?.find((address) => address.family === 'IPv4' && !address.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

/** `host` as the host part of a SIP URI or Via (IPv6 literals in brackets). */
function uriHost(host: string): string {
  return net.isIP(host) === 6 ? `[${host}]` : host;
}

/** The OPTIONS request, with the Via branch and Call-ID a response is matched on. */
export function optionsRequest(
  target: SipOptionsTarget,
  local: { address: string; port: number },
): { text: string; branch: string; callId: string } {
  const branch = newBranch();
  const callId = newCallId(local.address);
  const text = serialize(`OPTIONS sip:${uriHost(target.host)}:${target.port} SIP/2.0`, [
    ['Via', `SIP/2.0/UDP ${uriHost(local.address)}:${local.port};branch=${branch};rport`],
    ['Max-Forwards', 70],
    ['From', `<sip:outdial@${uriHost(local.address)}>;tag=${newTag()}`],
    ['To', `<sip:${uriHost(target.host)}:${target.port}>`],
    ['Call-ID', callId],
    ['CSeq', '1 OPTIONS'],
    ['Contact', `<sip:outdial@${uriHost(local.address)}:${local.port}>`],
    ['Accept', 'application/sdp'],
    ['User-Agent', 'outdial'],
  ]);
  return { text, branch, callId };
}

/** Whether a datagram is the response to our request (same branch and Call-ID). */
function answers(raw: string, request: { branch: string; callId: string }): SipOptionsAnswer | null {
  try {
    const message = parseMessage(raw);
    if (message.status === 0) return null;
    const via = message.headers.get('via')?.[0] ?? '';
    const callId = message.headers.get('call-id')?.[0] ?? '';
    if (!via.includes(request.branch) || callId !== request.callId) return null;
    return { status: message.status, reason: message.reason, latencyMs: 0 };
  } catch {
    return null;
  }
}

/**
 * Sends OPTIONS to `target` and resolves with the first final or provisional response's status and
 * reason, whatever the status (a 401 or 404 from a trunk is an answer: the caller judges it).
 * Rejects with SipOptionsError "no answer to OPTIONS within N ms" when nothing answers, or when the
 * socket fails (a name that does not resolve). The socket and timers are gone when it settles.
 */
export async function sipOptions(
  target: SipOptionsTarget,
  settings: SipOptionsSettings = {},
): Promise<SipOptionsAnswer> {
  const timeoutMs = settings.timeoutMs ?? T2_MS;
  const socket = dgram.createSocket(net.isIP(target.host) === 6 ? 'udp6' : 'udp4');
  const timers = new Set<NodeJS.Timeout>();
  const stop = () => {
    for (const timer of timers) clearTimeout(timer);
    socket.removeAllListeners('message');
    socket.close();
  };
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, () => {
        socket.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    socket.close();
    throw new SipOptionsError(`could not open a UDP socket: ${(error as Error).message}`);
  }
  const local = { address: settings.address ?? localAddressFor(target.host), port: socket.address().port };
  const request = optionsRequest(target, local);
  const started = performance.now();
  try {
    return await new Promise<SipOptionsAnswer>((resolve, reject) => {
      const fail = (message: string) => reject(new SipOptionsError(message));
      socket.on('error', (error) =>
        fail(`OPTIONS to ${target.host}:${target.port} failed: ${error.message}`),
      );
      socket.on('message', (data) => {
        const answer = answers(data.toString('utf8'), request);
        if (answer) resolve({ ...answer, latencyMs: Math.round(performance.now() - started) });
      });
      const send = () =>
        socket.send(request.text, target.port, target.host, (error) => {
          if (error) fail(`OPTIONS to ${target.host}:${target.port} could not be sent: ${error.message}`);
        });
      // Timer E (RFC 3261 17.1.2.2): again after T1, then doubling, at most T2 apart.
      const retransmit = (interval: number) => {
        timers.add(
          setTimeout(() => {
            send();
            retransmit(Math.min(interval * 2, T2_MS));
          }, interval),
        );
      };
      send();
      retransmit(T1_MS);
      timers.add(setTimeout(() => fail(`no answer to OPTIONS within ${timeoutMs} ms`), timeoutMs));
    });
  } finally {
    stop();
  }
}
