import type { LiveCallEntry } from '../../ports.js';
import type { Deps } from '../deps.js';
import type { EndedCall } from '../events.js';
import type { RecordingLinks } from '../recording-links.js';

/** The columns a call's live entry is built from (`LiveView.liveFromRow`): a call as its end left it. */
export type CallRow = EndedCall;

/** How long a live entry read or written by this process is reused without asking the cache. */
const NEAR_CACHE_MS = 250;
const NEAR_CACHE_MAX = 10_000;

/**
 * The live view of calls (the LiveCache port, Redis or memory): the only writer of the live
 * cache, with this process's near cache in front of it.
 */
export class LiveView {
  private readonly near = new Map<string, { at: number; entry: LiveCallEntry }>();

  constructor(
    private readonly deps: Pick<Deps, 'cache' | 'logger'>,
    private readonly links: RecordingLinks,
  ) {}

  /** Publishes a call's live entry (the dispatcher does, when a batch call starts). */
  async announce(entry: LiveCallEntry): Promise<void> {
    await this.putLive(entry);
  }

  /** The live view of a single (non-batch) call that has just been opened: ONGOING, nothing yet. */
  async putNewSingleCall(
    callId: string,
    userId: string,
    contact: { id: string; phone_number: string },
    now: Date,
  ): Promise<void> {
    await this.putLive({
      callId,
      userId,
      status: 'ONGOING',
      startTime: now.toISOString(),
      phoneNumber: contact.phone_number,
      contactId: contact.id,
      batchId: null,
      error: null,
      duration: null,
      recordingUrl: null,
    });
  }

  /**
   * A call went out later than it was announced (it waited for its trunk): the live view shows
   * the moment it did, as the call row does.
   */
  async started(callId: string, at: Date): Promise<void> {
    const startTime = at.toISOString();
    // Announced by this process with this start already (a batch call, by the dispatcher): only
    // the process that sends a call moves its start, so there is nothing to read or write.
    if (this.near.get(callId)?.entry.startTime === startTime) return;
    const entry = await this.readLive(callId);
    if (entry?.status !== 'ONGOING' || entry.startTime === startTime) return;
    await this.putLive({ ...entry, startTime });
  }

  liveFromRow(row: CallRow): LiveCallEntry {
    return {
      callId: row.id,
      userId: row.user_id,
      status: row.status,
      startTime: row.created_at.toISOString(),
      phoneNumber: row.phone_number,
      contactId: row.contact_id,
      batchId: row.batch_id,
      error: row.error,
      duration: row.status === 'ONGOING' ? null : row.duration,
      recordingUrl: this.links.url(row.id, row.status, row.duration),
    };
  }

  /** The live cache is a view: when it is down the call goes on and the database answers reads. */
  async putLive(entry: LiveCallEntry): Promise<void> {
    this.near.set(entry.callId, { at: Date.now(), entry });
    try {
      await this.deps.cache.putCall(entry);
    } catch (error) {
      this.deps.logger.warn({ err: error, callId: entry.callId }, 'live cache write failed');
    }
  }

  /**
   * The live entry if this process read or wrote it in the last NEAR_CACHE_MS, else undefined:
   * what `readLive` answers without a promise (a status read under load is answered from here).
   */
  nearLive(callId: string, now = Date.now()): LiveCallEntry | undefined {
    const near = this.near.get(callId);
    return near && now - near.at < NEAR_CACHE_MS ? near.entry : undefined;
  }

  /**
   * The live entry: from this process's near cache when it was read or written here in the last
   * NEAR_CACHE_MS (a client polling a call every few milliseconds costs one cache read per
   * window), from the live cache otherwise.
   */
  async readLive(callId: string): Promise<LiveCallEntry | null> {
    const now = Date.now();
    const near = this.nearLive(callId, now);
    if (near) return near;
    if (this.near.size > NEAR_CACHE_MAX) {
      for (const [id, item] of this.near) if (now - item.at >= NEAR_CACHE_MS) this.near.delete(id);
    }
    try {
      const entry = await this.deps.cache.getCall(callId);
      if (entry) this.near.set(callId, { at: now, entry });
      return entry;
    } catch (error) {
      this.deps.logger.warn({ err: error, callId }, 'live cache read failed; answering from the database');
      return null;
    }
  }
}
