import type { LiveCallEvent, LiveCommand, LiveReply, LiveRequestResult } from '../../domain/live-call.js';
import type { LiveCallChannel } from '../../ports.js';

type Handler = (command: LiveCommand) => Promise<LiveReply>;

/**
 * The live call channel in one process (embedded mode): the host's handler is called directly
 * and events go to the listeners of this process, each on its own task so a listener never runs
 * inside the host's call stack (as it would not over Redis).
 */
export class MemoryLiveChannel implements LiveCallChannel {
  private readonly hosts = new Map<string, Handler>();
  private readonly listeners = new Map<string, Set<(event: LiveCallEvent) => void>>();

  async serve(callId: string, handler: Handler): Promise<() => Promise<void>> {
    this.hosts.set(callId, handler);
    return async () => {
      if (this.hosts.get(callId) === handler) this.hosts.delete(callId);
    };
  }

  async request(callId: string, command: LiveCommand, timeoutMs: number): Promise<LiveRequestResult> {
    const handler = this.hosts.get(callId);
    if (!handler) return 'not-live';
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const answered = handler(command).catch(
        (error: unknown): LiveReply => ({
          ok: false,
          outcome: 'refused',
          reason: error instanceof Error ? error.message : String(error),
        }),
      );
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async publish(callId: string, event: LiveCallEvent): Promise<void> {
    const listeners = this.listeners.get(callId);
    if (!listeners) return;
    for (const listener of [...listeners]) setImmediate(() => listener(event));
  }

  async subscribe(callId: string, listener: (event: LiveCallEvent) => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(callId);
    if (!set) {
      set = new Set();
      this.listeners.set(callId, set);
    }
    set.add(listener);
    return async () => {
      const current = this.listeners.get(callId);
      current?.delete(listener);
      if (current?.size === 0) this.listeners.delete(callId);
    };
  }

  /** Listeners following a call now (tests check that a closed stream left none). */
  followers(callId: string): number {
    return this.listeners.get(callId)?.size ?? 0;
  }

  async close(): Promise<void> {
    this.hosts.clear();
    this.listeners.clear();
  }
}
