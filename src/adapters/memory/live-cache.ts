import {
  type Clock,
  LIVE_TTL_SECONDS,
  type LiveCache,
  type LiveCallEntry,
  systemClock,
} from '../../ports.js';

interface Stored {
  entry: LiveCallEntry;
  expiresAt: number;
}

export interface MemoryLiveCacheOptions {
  /** Most calls kept; the least recently written go first. 100,000 entries is about 60 MB. */
  maxEntries?: number;
  ttlSeconds?: number;
  clock?: Clock;
}

/**
 * The embedded live view: a Map in insertion order doubles as an LRU (a rewrite moves an entry to
 * the end), so the bound costs O(1) per write. Batches keep the set of their call ids.
 */
export class MemoryLiveCache implements LiveCache {
  private readonly calls = new Map<string, Stored>();
  private readonly batches = new Map<string, Set<string>>();
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly clock: Clock;

  constructor(options: MemoryLiveCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    this.ttlMs = (options.ttlSeconds ?? LIVE_TTL_SECONDS) * 1000;
    this.clock = options.clock ?? systemClock;
  }

  async putCall(entry: LiveCallEntry): Promise<void> {
    this.calls.delete(entry.callId);
    this.calls.set(entry.callId, { entry: { ...entry }, expiresAt: this.clock.now().getTime() + this.ttlMs });
    if (entry.batchId) {
      let members = this.batches.get(entry.batchId);
      if (!members) {
        members = new Set();
        this.batches.set(entry.batchId, members);
      }
      members.add(entry.callId);
    }
    while (this.calls.size > this.maxEntries) {
      const oldest = this.calls.keys().next().value;
      if (oldest === undefined) break;
      this.evict(oldest);
    }
  }

  async getCall(callId: string): Promise<LiveCallEntry | null> {
    const stored = this.calls.get(callId);
    if (!stored) return null;
    if (stored.expiresAt <= this.clock.now().getTime()) {
      this.evict(callId);
      return null;
    }
    return { ...stored.entry };
  }

  async getBatchCalls(batchId: string): Promise<LiveCallEntry[]> {
    const members = this.batches.get(batchId);
    if (!members) return [];
    const out: LiveCallEntry[] = [];
    for (const callId of [...members]) {
      const entry = await this.getCall(callId);
      if (entry) out.push(entry);
    }
    return out;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.calls.clear();
    this.batches.clear();
  }

  get size(): number {
    return this.calls.size;
  }

  private evict(callId: string): void {
    const stored = this.calls.get(callId);
    this.calls.delete(callId);
    const batchId = stored?.entry.batchId;
    if (!batchId) return;
    const members = this.batches.get(batchId);
    members?.delete(callId);
    if (members?.size === 0) this.batches.delete(batchId);
  }
}
