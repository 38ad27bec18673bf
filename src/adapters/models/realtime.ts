/**
 * A connection to an OpenAI Realtime API server (OUTDIAL_REALTIME_URL): OpenAI, speaches, LocalAI.
 * One WebSocket per call; events are JSON objects with a `type` both ways. This module only opens
 * the socket, sends and parses events and reports how the connection ended; what the events mean
 * is the realtime engine's (src/voice/engines/realtime.ts).
 */
import WebSocket from 'ws';
import type {
  RealtimeConnectOptions,
  RealtimeEndpoint,
  RealtimeEvent,
  RealtimeLink,
} from '../../voice/contracts.js';

/** The connection failed: it could not be opened, the server closed it, or sent what is not an event. */
export class RealtimeConnectionError extends Error {
  override name = 'RealtimeConnectionError';
}

/** Largest event taken from the server: a second of 24 kHz PCM16 in base64 is 64 KB; 16 MB is far past any. */
const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/** The WebSocket URL for `endpoint`: its path ending in /realtime, `model` in the query. */
export function realtimeUrl(endpoint: RealtimeEndpoint): string {
  const url = new URL(endpoint.url);
  if (!/\/realtime\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/realtime`;
  url.searchParams.set('model', endpoint.model);
  return url.toString();
}

/** One call's connection: the RealtimeConnect port of src/voice/contracts.ts is `RealtimeConnection.open`. */
export class RealtimeConnection implements RealtimeLink {
  private ended = false;

  private constructor(
    private readonly socket: WebSocket,
    onEvent: (event: RealtimeEvent) => void,
    private readonly onEnd: (error: RealtimeConnectionError) => void,
  ) {
    socket.on('message', (data, isBinary) => {
      if (this.ended) return;
      const event = isBinary ? null : parseEvent(data.toString());
      if (!event) {
        this.fail('the realtime server sent a message that is not a JSON event');
        return;
      }
      onEvent(event);
    });
    socket.on('close', (code, reason) => {
      const why = reason.toString();
      this.fail(`the realtime server closed the connection (${code}${why ? `: ${why}` : ''})`);
    });
    socket.on('error', (error) => this.fail(`the realtime connection failed: ${error.message}`));
  }

  /**
   * Opens the socket; rejects with a RealtimeConnectionError when it is not open within
   * `timeoutMs` or `signal` aborts. `onEnd` is called once if the connection ends other than by
   * `close()`.
   */
  static open(endpoint: RealtimeEndpoint, options: RealtimeConnectOptions): Promise<RealtimeConnection> {
    const headers: Record<string, string> = {
      // The session.update fields outdial sends (input_audio_format, turn_detection, ...) are the
      // beta interface's; OpenAI takes them with this header, speaches and LocalAI ignore it.
      'OpenAI-Beta': 'realtime=v1',
    };
    if (endpoint.apiKey) headers.Authorization = `Bearer ${endpoint.apiKey}`;
    const socket = new WebSocket(realtimeUrl(endpoint), {
      headers,
      handshakeTimeout: options.timeoutMs,
      maxPayload: MAX_PAYLOAD_BYTES,
    });
    return new Promise((resolve, reject) => {
      const settle = (error: Error | null) => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
        socket.off('open', onOpen);
        socket.off('error', onError);
        socket.off('unexpected-response', onRefused);
        if (error === null) {
          resolve(new RealtimeConnection(socket, options.onEvent, options.onEnd));
          return;
        }
        socket.on('error', () => undefined);
        socket.terminate();
        reject(error);
      };
      const onOpen = () => settle(null);
      const onError = (error: Error) =>
        settle(new RealtimeConnectionError(`could not connect to the realtime server: ${error.message}`));
      const onRefused = (_request: unknown, response: { statusCode?: number }) =>
        settle(
          new RealtimeConnectionError(
            `the realtime server refused the connection with HTTP ${response.statusCode ?? '?'}`,
          ),
        );
      const onAbort = () =>
        settle(new RealtimeConnectionError('the call ended before the realtime server answered'));
      const timer = setTimeout(
        () =>
          settle(
            new RealtimeConnectionError(`the realtime server did not answer within ${options.timeoutMs} ms`),
          ),
        options.timeoutMs,
      );
      socket.once('open', onOpen);
      socket.once('error', onError);
      socket.once('unexpected-response', onRefused);
      if (options.signal.aborted) onAbort();
      else options.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sends a client event; dropped once the connection has ended. */
  send(event: { type: string; [field: string]: unknown }): void {
    if (this.ended || this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(JSON.stringify(event));
  }

  /** Closes the connection (normal closure); `onEnd` is not called. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.on('error', () => undefined);
    this.socket.close(1000);
    // A server that does not answer the close handshake does not keep the socket open.
    const terminate = setTimeout(() => this.socket.terminate(), 2000).unref();
    this.socket.once('close', () => clearTimeout(terminate));
  }

  private fail(message: string): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.terminate();
    this.onEnd(new RealtimeConnectionError(message));
  }
}

/**
 * A dependency probe (ports.ts `DependencyProber`): opens the socket a call would, waits for the
 * server's `session.created`, and closes it. Rejects with a RealtimeConnectionError when the
 * connection is refused or fails, the server sends an `error` event or closes first, or `timeoutMs`
 * passes first.
 */
export async function probeRealtime(endpoint: RealtimeEndpoint, timeoutMs: number): Promise<void> {
  const started = performance.now();
  const stopped = new AbortController();
  let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const session = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const link = await RealtimeConnection.open(endpoint, {
    timeoutMs,
    signal: stopped.signal,
    onEvent: (event) => {
      if (event.type === 'session.created') settle?.resolve();
      else if (event.type === 'error')
        settle?.reject(new RealtimeConnectionError(`the realtime server sent an error: ${errorText(event)}`));
    },
    onEnd: (error) => settle?.reject(error),
  });
  const left = Math.max(0, timeoutMs - (performance.now() - started));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new RealtimeConnectionError(`the realtime server sent no session.created within ${timeoutMs} ms`),
        ),
      left,
    );
  });
  try {
    await Promise.race([session, late]);
  } finally {
    clearTimeout(timer);
    link.close();
  }
}

function errorText(event: RealtimeEvent): string {
  const error = (event as { error?: { message?: unknown } }).error;
  return typeof error?.message === 'string' ? error.message : 'no message';
}

function parseEvent(text: string): RealtimeEvent | null {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' ? (value as RealtimeEvent) : null;
  } catch {
    return null;
  }
}
