/** One Server-Sent Event as a client reads it. */
export interface SseEvent {
  event: string;
  id: string | null;
  data: Record<string, unknown>;
}

export interface SseStream {
  status: number;
  contentType: string | null;
  events: SseEvent[];
  /** Comment lines (`: heartbeat`), without the colon. */
  comments: string[];
  /** Resolves when the server ended the stream. */
  closed: Promise<void>;
  /** Waits for an event that `match` accepts (from the start of the stream), up to `timeoutMs`. */
  next(match: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** The client goes away. */
  abort(): void;
}

/**
 * Opens an event stream as a browser's EventSource would (GET, Accept: text/event-stream) and
 * parses it as it arrives: `event:`, `id:`, `data:` lines and comments, blank line ending each.
 */
export async function openEventStream(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  let ended = false;
  const closed = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          let id: string | null = null;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ event, id, data: JSON.parse(data.join('\n')) });
          wake();
        }
      }
    } catch {
      // aborted by the client
    } finally {
      ended = true;
      wake();
    }
  })();
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    events,
    comments,
    closed,
    abort: () => controller.abort(),
    next(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const found = events.find(match);
          if (found) {
            finish();
            resolve(found);
          } else if (ended) {
            finish();
            reject(new Error(`the stream ended without the event; it had ${JSON.stringify(events)}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no such event within ${timeoutMs} ms; the stream had ${JSON.stringify(events)}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(look);
        };
        waiters.add(look);
        look();
      });
    },
  };
}
