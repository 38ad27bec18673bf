/**
 * A SIP far end that only answers OPTIONS, for the trunk probes and `outdial doctor`: a UDP socket
 * on 127.0.0.1 that answers each OPTIONS with the status it is set to (200 unless told), or stays
 * silent, and records every request it received (parsed with src/adapters/voice/sip/message.ts).
 */
import dgram from 'node:dgram';
import { parseMessage, responseTo, type SipMessage } from '../../src/adapters/voice/sip/message.js';

export interface SipOptionsServerSettings {
  /** The status answered; null: no answer at all (a trunk that drops the packets). Default 200. */
  status?: number | null;
  reason?: string;
}

export interface SipOptionsServer {
  /** The UDP port on 127.0.0.1. */
  port: number;
  /** Every request received, retransmissions included, with the raw text. */
  requests: Array<{ message: SipMessage; raw: string }>;
  set(settings: SipOptionsServerSettings): void;
  /** Stops answering: the port is closed from now on (a second call does nothing). */
  close(): Promise<void>;
}

const REASONS: Record<number, string> = {
  200: 'OK',
  401: 'Unauthorized',
  404: 'Not Found',
  503: 'Service Unavailable',
};

export async function startSipOptionsServer(
  initial: SipOptionsServerSettings = {},
): Promise<SipOptionsServer> {
  const settings: SipOptionsServerSettings = { ...initial };
  const requests: SipOptionsServer['requests'] = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (data, from) => {
    const raw = data.toString('utf8');
    const message = parseMessage(raw);
    requests.push({ message, raw });
    const status = settings.status === undefined ? 200 : settings.status;
    if (status === null || message.method !== 'OPTIONS') return;
    const reason = settings.reason ?? REASONS[status] ?? 'Whatever';
    socket.send(responseTo(message, status, reason), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  let closed = false;
  return {
    port: socket.address().port,
    requests,
    set: (changes) => {
      Object.assign(settings, changes);
    },
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      return new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}

/** A UDP port on 127.0.0.1 where nothing listens: one taken and released. */
export async function closedUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}
