/**
 * What the HTTP model clients share: the endpoint from a base URL, the bearer header, a deadline
 * that turns into a ModelError, and reading an error answer.
 */
import type { Dispatcher } from 'undici';
import { ModelError, type ModelPort } from './errors.js';

/**
 * The endpoint for `path` (e.g. '/chat/completions') under an OpenAI-compatible base URL such as
 * `https://api.openai.com/v1`; a URL that already ends in `path` is taken as it is.
 */
export function endpointUrl(base: string, path: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return trimmed.endsWith(path) ? trimmed : `${trimmed}${path}`;
}

export function authHeaders(apiKey: string | undefined | null): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

/**
 * One request's cancellation: the caller's signal, and a deadline the client moves as the answer
 * comes in (until the first byte, then between chunks). `signal` aborts the HTTP request on
 * either; `timedOut` tells them apart.
 */
export class RequestDeadline {
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #timedOut = false;
  readonly signal: AbortSignal;

  constructor(
    readonly caller: AbortSignal | undefined,
    timeoutMs: number,
  ) {
    this.signal = caller ? AbortSignal.any([caller, this.#controller.signal]) : this.#controller.signal;
    this.extend(timeoutMs);
  }

  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** The deadline is now `ms` from now. */
  extend(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#controller.abort(new Error(`no answer within ${ms} ms`));
    }, ms);
  }

  /** No deadline while the consumer holds what came (extend() sets one again). */
  pause(): void {
    clearTimeout(this.#timer);
  }

  /** Cancels the request (the consumer stopped early); harmless when it is over. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#controller.abort(new Error('cancelled'));
  }
}

/**
 * What a failed request turns into: the caller's own abort is passed on as it is (an AbortError,
 * not a model failure), a deadline becomes a 'timeout', anything else a 'network' failure.
 */
export function requestFailure(
  port: ModelPort,
  url: string,
  deadline: RequestDeadline,
  error: unknown,
  timeoutMs: number,
): unknown {
  if (error instanceof ModelError) return error;
  if (deadline.caller?.aborted) return deadline.caller.reason;
  if (deadline.timedOut)
    return new ModelError(port, 'timeout', `${url} did not answer within ${timeoutMs} ms`);
  const cause = (error as { cause?: unknown }).cause;
  const detail = error instanceof Error ? error.message : String(error);
  const more = cause instanceof Error && cause.message !== detail ? `: ${cause.message}` : '';
  return new ModelError(port, 'network', `${url} failed: ${detail}${more}`);
}

/** Reads an error answer and throws it as a ModelError naming the status and the server's message. */
export async function throwStatus(
  port: ModelPort,
  url: string,
  response: Dispatcher.ResponseData,
): Promise<never> {
  const text = await response.body.text().catch(() => '');
  let message = text.slice(0, 300);
  try {
    const parsed = JSON.parse(text) as {
      error?: { message?: unknown } | string;
      message?: unknown;
      detail?: unknown;
    };
    const candidate =
      typeof parsed.error === 'string'
        ? parsed.error
        : (parsed.error?.message ?? parsed.message ?? parsed.detail);
    if (typeof candidate === 'string') message = candidate.slice(0, 300);
  } catch {
    // Not JSON: the text itself.
  }
  throw new ModelError(
    port,
    'status',
    `${url} answered ${response.statusCode}${message ? `: ${message}` : ''}`,
    response.statusCode,
  );
}
