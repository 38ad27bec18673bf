/**
 * An agent's HTTP tools: when the model calls one, outdial POSTs `{name, arguments, callId}` to the
 * tool's url, signed like webhooks (the same headers, HMAC and secret: the call's user's webhook
 * secret), through the same address guard as webhook delivery, with a timeout, and hands the JSON
 * answer back to the model. Failures are answers too: the model is told the tool failed.
 */
import { randomUUID } from 'node:crypto';
import { type Dispatcher, request } from 'undici';
import type { HttpTool } from '../domain/agent-call.js';
import { signatureHeaders } from '../domain/webhooks.js';
import { assertDeliverableHost } from '../webhooks/address-guard.js';
import { describeHttpError } from '../webhooks/http-error.js';

export interface HttpToolCallerOptions {
  /** The HTTP client: the webhooks' undici Agent, whose connect step refuses forbidden addresses. */
  dispatcher: Dispatcher;
  /** OUTDIAL_WEBHOOK_ALLOW_PRIVATE: loopback and private addresses allowed (tests, a LAN). */
  allowPrivate: boolean;
  /** The secrets that sign a call's requests (its user's webhook secret; the previous one too during a rotation). */
  signingSecrets(callId: string): Promise<string[]>;
  /** Milliseconds a tool may take in all (default 10 s: the callee is waiting on the line). */
  timeoutMs?: number;
  userAgent?: string;
}

export type HttpToolResult = { ok: true; result: unknown } | { ok: false; error: string };

const DEFAULT_TIMEOUT_MS = 10_000;
/** An answer larger than this is cut off: the model reads it, and 32 KB is already ~8k tokens. */
const MAX_ANSWER_BYTES = 32 * 1024;

export class HttpToolCaller {
  private readonly timeoutMs: number;

  constructor(private readonly options: HttpToolCallerOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Calls `tool` with the model's arguments; never throws. */
  async call(
    tool: HttpTool,
    args: Record<string, unknown>,
    callId: string,
    signal?: AbortSignal,
  ): Promise<HttpToolResult> {
    let url: URL;
    try {
      url = new URL(tool.url);
      assertDeliverableHost(url, this.options.allowPrivate);
    } catch (error) {
      return { ok: false, error: describeHttpError(error) };
    }
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const stop = signal ? AbortSignal.any([deadline, signal]) : deadline;
    try {
      const secrets = await this.options.signingSecrets(callId);
      if (secrets.length === 0) return { ok: false, error: 'no webhook secret to sign the request with' };
      const body = JSON.stringify({ name: tool.name, arguments: args, callId });
      const answer = await request(url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'user-agent': this.options.userAgent ?? 'outdial-tools',
          ...signatureHeaders({
            id: `tool_${randomUUID()}`,
            timestamp: Math.floor(Date.now() / 1000),
            body,
            secrets,
          }),
        },
        dispatcher: this.options.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: stop,
      });
      const text = await readLimited(answer.body, MAX_ANSWER_BYTES);
      if (answer.statusCode < 200 || answer.statusCode >= 300) {
        return {
          ok: false,
          error: `the tool answered ${answer.statusCode}${text ? `: ${text.slice(0, 200)}` : ''}`,
        };
      }
      return { ok: true, result: parseAnswer(text) };
    } catch (error) {
      if (deadline.aborted)
        return { ok: false, error: `the tool did not answer within ${this.timeoutMs} ms` };
      if (signal?.aborted) return { ok: false, error: 'the call ended before the tool answered' };
      return { ok: false, error: describeHttpError(error) };
    }
  }
}

/** JSON when the answer is JSON; a plain-text answer is handed to the model as it is. */
function parseAnswer(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

async function readLimited(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  limit: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
