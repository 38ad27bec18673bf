import { initialContactState } from '../domain/batch-lifecycle.js';
import { contactZone } from '../domain/calling-window.js';
import { hasConsent } from '../domain/consent.js';
import { type BatchContactInput, contactChanges, distinctContacts } from '../domain/contacts.js';
import { newId } from '../domain/ids.js';
import type { ContactMerge, ContactsRepo } from '../store/contacts.js';
import { type BatchLifecycle, queueContacts } from './batch-lifecycle.js';
import { type BatchService, INGEST_CHUNK, INGEST_LEASE_MS } from './batches.js';
import type { Deps } from './deps.js';

/**
 * Ingestion passes one batch may start, counted in the database (`batches.ingest_passes`, the
 * first pass included). A pass that stops on a database outage, or with its process killed, is
 * taken up again by recovery after the lease (10 s); five passes ride out a 40 s outage or four
 * crashes, and a batch that keeps stopping its process (say, out of memory on its body) is failed
 * instead of being re-parsed forever, whichever process or restart takes it up.
 */
export const MAX_INGEST_PASSES = 5;

/** What a failed batch says when ingestion gave up on it (its `error.code`, and batch.failed's `code`). */
export const INGEST_FAILED = 'INGEST_FAILED';

/**
 * Writes a batch's contacts in chunks, each chunk's dial rows in one transaction together with the
 * batch's `ingested` counter, so a crash loses at most the chunk in progress and a restart resumes
 * at the counter. Every write is idempotent (contacts are upserted, batch rows are inserted with ON
 * CONFLICT DO NOTHING), so two processes that both ingest one batch still write each row once.
 */
export class BatchIngester {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: Deps,
    private readonly batches: Pick<BatchService, 'fail'>,
    private readonly lifecycle: Pick<BatchLifecycle, 'markIngested'>,
  ) {}

  /** Starts ingesting in the background (used right after the 202, with the already parsed contacts). */
  start(batchId: string, contacts?: BatchContactInput[]): void {
    if (this.running.has(batchId)) return;
    const work = this.ingest(batchId, contacts)
      .catch((error: unknown) => this.failed(batchId, error))
      .finally(() => this.running.delete(batchId));
    this.running.set(batchId, work);
  }

  /**
   * A pass failed. A database outage is left to recovery (another pass after the lease, counted
   * against MAX_INGEST_PASSES); anything else would fail again on the same body, so the batch is
   * failed now, visibly: status failed with INGEST_FAILED, and batch.failed to its onBatchFailed hook.
   */
  private async failed(batchId: string, error: unknown): Promise<void> {
    if (isTransientDatabaseError(error)) {
      this.deps.logger.warn({ err: error, batchId }, 'ingestion stopped; another pass resumes it');
      return;
    }
    this.deps.logger.error({ err: error, batchId }, 'ingestion failed; failing the batch');
    await this.giveUp(batchId, error instanceof Error ? error.message.slice(0, 200) : 'an unexpected error');
  }

  private async giveUp(batchId: string, reason: string): Promise<void> {
    try {
      await this.batches.fail(batchId, INGEST_FAILED, `The batch's contacts could not be stored: ${reason}`);
    } catch (failError) {
      // The database is still away: the batch stays ingesting and the next pass decides again.
      this.deps.logger.error({ err: failError, batchId }, 'could not mark the batch failed');
    }
  }

  /** Waits for the ingestions this process is running (shutdown, tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.running.values()]);
  }

  /**
   * Takes over batches left `ingesting` by a process that stopped (its lease ran out) and ingests
   * them from their stored request. Returns how many it took.
   */
  async recover(options: { limit?: number; ignoreLease?: boolean } = {}): Promise<number> {
    const { store, clock } = this.deps;
    const now = clock.now();
    const limit = options.limit ?? 2;
    let taken = 0;
    for (let i = 0; i < limit; i++) {
      const claimed = await store.tx(async (repos) => {
        const id = await repos.batches.lockOrphanedIngestion(now, options.ignoreLease ?? false);
        if (!id || this.running.has(id)) return null;
        const passes = await repos.batches.startIngestPass(id, new Date(now.getTime() + INGEST_LEASE_MS));
        return { id, passes };
      });
      if (!claimed) break;
      taken++;
      if (claimed.passes > MAX_INGEST_PASSES) {
        this.deps.logger.error(claimed, 'ingestion never finished; failing the batch');
        await this.giveUp(
          claimed.id,
          `ingestion was started ${claimed.passes - 1} times and stopped each time (the process ended or the database was unavailable)`,
        );
        continue;
      }
      this.deps.logger.info(
        { batchId: claimed.id, pass: claimed.passes },
        'resuming an interrupted ingestion',
      );
      this.start(claimed.id);
    }
    return taken;
  }

  private async ingest(batchId: string, preparsed?: BatchContactInput[]): Promise<void> {
    const { store, clock } = this.deps;
    // PGlite runs in this thread and its promises resolve without yielding to I/O: give the event
    // loop a turn first (so the 202 goes out now) and between chunks (so the API stays responsive).
    await yieldToEventLoop();
    const batch = await store.batches.ingesting(batchId);
    if (batch?.status !== 'ingesting') return;
    let contacts = preparsed;
    if (!contacts) {
      const body = await store.batchPayloads.body(batchId);
      if (body === undefined) throw new Error(`batch ${batchId} is ingesting but its request is gone`);
      contacts = distinctContacts((JSON.parse(body) as { contacts: BatchContactInput[] }).contacts).distinct;
    }
    const startAt = batch.scheduled_start_at ?? null;
    // Two stages, overlapped: while one connection queues chunk k (under the batch row lock), another
    // already upserts chunk k+1's contacts. Upserting contacts queues nothing and is idempotent, so
    // running it ahead of the lock is safe: after a cancel or a crash the extra contacts are simply
    // the user's contacts, and a resumed ingestion upserts them again to the same rows.
    const upsertFrom = (from: number) => {
      const chunk = contacts.slice(from, from + INGEST_CHUNK);
      const work = upsertContacts(store.contacts, batch.user_id, chunk).then((ids) => ({ chunk, ids }));
      work.catch(() => undefined); // awaited below; this only keeps it from counting as unhandled
      return work;
    };
    let ahead = batch.ingested < contacts.length ? upsertFrom(batch.ingested) : null;
    for (let from = batch.ingested; ahead; from += INGEST_CHUNK) {
      const { chunk, ids } = await ahead;
      ahead = from + INGEST_CHUNK < contacts.length ? upsertFrom(from + INGEST_CHUNK) : null;
      const proceed = await store.tx(async (repos) => {
        // The batch row lock orders this chunk against a cancel: after a cancel nothing more is queued.
        if ((await repos.batches.lockStatus(batchId)) !== 'ingesting') return false;
        const now = clock.now();
        await queueContacts(repos, {
          batchId,
          rows: chunk.map((contact, index) => ({
            seq: from + index,
            contactId: ids[index] as string,
            phone: contact.phoneNumber,
            timezone: contactZone(contact.timezone ?? null, contact.phoneNumber, batch.timezone),
            skipped: initialContactState(batch.require_consent, hasConsent(contact)) === 'skipped',
          })),
          dueAt: startAt ?? now,
        });
        await repos.batches.noteIngested(
          batchId,
          from + chunk.length,
          new Date(now.getTime() + INGEST_LEASE_MS),
          now,
        );
        return true;
      });
      if (!proceed) {
        await ahead?.catch(() => undefined);
        return;
      }
      await yieldToEventLoop();
    }
    await store.tx(async (repos) => {
      const next = await this.lifecycle.markIngested(repos, batch, startAt, clock.now());
      if (next) await repos.batchPayloads.delete(batchId);
    });
    this.deps.logger.info({ batchId, contacts: contacts.length }, 'batch ingested');
  }
}

/**
 * Failures that a later pass may not meet: the connection or the server went away (SQLSTATE
 * classes 08 and 57P, resources in 53, a serialization or lock conflict), or the socket failed.
 * Everything else (a value the database refuses, a bug) fails the same way on the same body.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (/^(08|53|57P)/.test(code) || code === '40001' || code === '40P01' || code === '55P03') return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code))
      return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|connection is closed/i.test(
    error.message,
  );
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A chunk's contacts, merged by the contacts repository in two set-based statements: those given
 * by an id of the user's are updated in place, the rest upserted by the user's phone number.
 * Returns each contact's row id, in chunk order.
 */
async function upsertContacts(
  repo: ContactsRepo,
  userId: string,
  contacts: BatchContactInput[],
): Promise<string[]> {
  const givenIds = contacts.map((c) => c.id).filter((id): id is string => typeof id === 'string');
  const known = new Set<string>();
  if (givenIds.length > 0) for (const id of await repo.idsOfUser(userId, givenIds)) known.add(id);

  // Every contact is written by the one merge rule (domain/contacts.ts), a single dial's too.
  const writes: ContactMerge[] = contacts.map((contact) => {
    const changes = { ...contactChanges(contact), phoneNumber: contact.phoneNumber };
    return contact.id && known.has(contact.id)
      ? { ...changes, id: contact.id, byId: true }
      : { ...changes, id: newId('cnt') };
  });
  const contactIdByPhone = new Map<string, string>();
  for (const row of await repo.merge(userId, writes)) contactIdByPhone.set(row.phone_number, row.id);
  return contacts.map((contact) => {
    const id = contactIdByPhone.get(contact.phoneNumber);
    if (!id) throw new Error(`no contact row for ${contact.phoneNumber}`);
    return id;
  });
}
