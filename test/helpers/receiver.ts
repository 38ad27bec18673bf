import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The exact body bytes, as text. */
  body: string;
  at: number;
}

/** What the receiver does with a request: answer a status (and headers, and a body), or never answer. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * A real local webhook receiver: records every request and answers as `respond` decides
 * (200 unless told otherwise), so tests see exactly what a customer's endpoint would.
 */
export class Receiver {
  readonly received: Received[] = [];
  respond: (request: Received, index: number) => Answer = () => ({ status: 200 });
  private readonly server: http.Server;
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const entry: Received = {
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(entry);
        const answer = this.respond(entry, this.received.length - 1);
        if (answer === 'hang') {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        res.writeHead(answer.status, answer.headers).end(answer.body ?? 'ok');
      });
    });
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(pathname = '/hook'): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}${pathname}`;
  }

  on(pathname: string): Received[] {
    return this.received.filter((entry) => entry.path === pathname);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Verifies both signatures of a delivery the way a receiver would, written here independently of
 * the service's code: `x-outdial-signature` (hex HMAC of the body; any of its comma-separated
 * values may match) and the Standard Webhooks `webhook-signature` over "{id}.{timestamp}.{body}".
 */
export function verifySignatures(received: Received, secret: string): { hex: boolean; standard: boolean } {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const same = (a: string, b: string) =>
    a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  const hexExpected = createHmac('sha256', key).update(received.body).digest('hex');
  const hexGiven = String(received.headers['x-outdial-signature'] ?? '').split(',');
  const id = String(received.headers['webhook-id']);
  const timestamp = String(received.headers['webhook-timestamp']);
  const standardExpected = createHmac('sha256', key)
    .update(`${id}.${timestamp}.${received.body}`)
    .digest('base64');
  const standardGiven = String(received.headers['webhook-signature'] ?? '')
    .split(' ')
    .map((part) => part.replace(/^v1,/, ''));
  return {
    hex: hexGiven.some((value) => same(value, hexExpected)),
    standard: standardGiven.some((value) => same(value, standardExpected)),
  };
}
