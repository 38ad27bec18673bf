import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import { initialContactState } from '../domain/batch-lifecycle.js';
import { contactZone } from '../domain/calling-window.js';
import { hasConsent, normalizeConsent } from '../domain/consent.js';
import { type BatchContactInput, distinctContacts } from '../domain/contacts.js';
import { newId } from '../domain/ids.js';
import { markIngested, queueContacts } from './batch-lifecycle.js';
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
    const { db, clock } = this.deps;
    const now = clock.now();
    const limit = options.limit ?? 2;
    let taken = 0;
    for (let i = 0; i < limit; i++) {
      const claimed = await db.transaction().execute(async (trx) => {
        let query = trx.selectFrom('batches').select('id').where('status', '=', 'ingesting');
        // At an embedded start every lease is an orphan's, whenever it would have run out.
        if (!options.ignoreLease) query = query.where('ingest_lease_until', '<', now);
        const row = await query.orderBy('created_at').limit(1).forUpdate().skipLocked().executeTakeFirst();
        if (!row || this.running.has(row.id)) return null;
        const { ingest_passes: passes } = await trx
          .updateTable('batches')
          .set({
            ingest_lease_until: new Date(now.getTime() + INGEST_LEASE_MS),
            ingest_passes: sql<number>`ingest_passes + 1`,
          })
          .where('id', '=', row.id)
          .returning('ingest_passes')
          .executeTakeFirstOrThrow();
        return { id: row.id, passes };
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
    const { db, clock } = this.deps;
    // PGlite runs in this thread and its promises resolve without yielding to I/O: give the event
    // loop a turn first (so the 202 goes out now) and between chunks (so the API stays responsive).
    await yieldToEventLoop();
    const batch = await db
      .selectFrom('batches')
      .select([
        'id',
        'user_id',
        'status',
        'ingested',
        'total',
        'scheduled_start_at',
        'timezone',
        'require_consent',
      ])
      .where('id', '=', batchId)
      .executeTakeFirst();
    if (batch?.status !== 'ingesting') return;
    let contacts = preparsed;
    if (!contacts) {
      const payload = await db
        .selectFrom('batch_payloads')
        .select('body')
        .where('batch_id', '=', batchId)
        .executeTakeFirst();
      if (!payload) throw new Error(`batch ${batchId} is ingesting but its request is gone`);
      contacts = distinctContacts(
        (JSON.parse(payload.body) as { contacts: BatchContactInput[] }).contacts,
      ).distinct;
    }
    const startAt = batch.scheduled_start_at ?? null;
    // Two stages, overlapped: while one connection queues chunk k (under the batch row lock), another
    // already upserts chunk k+1's contacts. Upserting contacts queues nothing and is idempotent, so
    // running it ahead of the lock is safe: after a cancel or a crash the extra contacts are simply
    // the user's contacts, and a resumed ingestion upserts them again to the same rows.
    const upsertFrom = (from: number) => {
      const chunk = contacts.slice(from, from + INGEST_CHUNK);
      const work = upsertContacts(db, batch.user_id, chunk).then((ids) => ({ chunk, ids }));
      work.catch(() => undefined); // awaited below; this only keeps it from counting as unhandled
      return work;
    };
    let ahead = batch.ingested < contacts.length ? upsertFrom(batch.ingested) : null;
    for (let from = batch.ingested; ahead; from += INGEST_CHUNK) {
      const { chunk, ids } = await ahead;
      ahead = from + INGEST_CHUNK < contacts.length ? upsertFrom(from + INGEST_CHUNK) : null;
      const proceed = await db.transaction().execute(async (trx) => {
        // The batch row lock orders this chunk against a cancel: after a cancel nothing more is queued.
        const current = await trx
          .selectFrom('batches')
          .select('status')
          .where('id', '=', batchId)
          .forUpdate()
          .executeTakeFirst();
        if (current?.status !== 'ingesting') return false;
        const now = clock.now();
        await queueContacts(trx, {
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
        await trx
          .updateTable('batches')
          .set({
            ingested: sql`greatest(ingested, ${from + chunk.length})`,
            ingest_lease_until: new Date(now.getTime() + INGEST_LEASE_MS),
            updated_at: now,
          })
          .where('id', '=', batchId)
          .execute();
        return true;
      });
      if (!proceed) {
        await ahead?.catch(() => undefined);
        return;
      }
      await yieldToEventLoop();
    }
    await db.transaction().execute(async (trx) => {
      const next = await markIngested(trx, batchId, startAt, clock.now());
      if (next) await trx.deleteFrom('batch_payloads').where('batch_id', '=', batchId).execute();
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
 * A chunk's contacts, in two statements: those given by an id of the user's are updated in place,
 * the rest upserted by the user's phone number. Returns each contact's row id, in chunk order.
 */
async function upsertContacts(db: Db, userId: string, contacts: BatchContactInput[]): Promise<string[]> {
  const givenIds = contacts.map((c) => c.id).filter((id): id is string => typeof id === 'string');
  const known = new Set<string>();
  if (givenIds.length > 0) {
    const rows = await db
      .selectFrom('contacts')
      .select('id')
      .where('user_id', '=', userId)
      .where('id', 'in', givenIds)
      .execute();
    for (const row of rows) known.add(row.id);
  }

  const byId: BatchContactInput[] = [];
  const byPhone: BatchContactInput[] = [];
  for (const contact of contacts) (contact.id && known.has(contact.id) ? byId : byPhone).push(contact);

  // A consent record given replaces the stored one (the latest batch's word); none given keeps it.
  const consentOf = (c: BatchContactInput) =>
    c.consent ? JSON.stringify(normalizeConsent(c.consent)) : null;
  const contactIdByPhone = new Map<string, string>();
  if (byId.length > 0) {
    await sql`
      update contacts c set
        name = case when x.name is null then c.name else x.name end,
        email = coalesce(x.email, c.email),
        company = coalesce(x.company, c.company),
        metadata = c.metadata || coalesce(x.meta::jsonb, '{}'::jsonb),
        timezone = coalesce(x.tz, c.timezone),
        consent = coalesce(x.consent::jsonb, c.consent),
        updated_at = now()
      from unnest(${byId.map((c) => c.id)}::text[], ${byId.map((c) => c.name ?? null)}::text[],
                  ${byId.map((c) => c.email ?? null)}::text[], ${byId.map((c) => c.company ?? null)}::text[],
                  ${byId.map((c) => (c.metadata ? JSON.stringify(c.metadata) : null))}::text[],
                  ${byId.map((c) => c.timezone ?? null)}::text[], ${byId.map(consentOf)}::text[])
        as x(id, name, email, company, meta, tz, consent)
      where c.id = x.id and c.user_id = ${userId}`.execute(db);
    for (const contact of byId) if (contact.id) contactIdByPhone.set(contact.phoneNumber, contact.id);
  }
  if (byPhone.length > 0) {
    const rows = await sql<{ id: string; phone_number: string }>`
      insert into contacts (id, user_id, phone_number, name, email, company, metadata, timezone, consent)
      select x.id, ${userId}, x.phone, coalesce(x.name, 'Unknown'), x.email, x.company, coalesce(x.meta::jsonb, '{}'::jsonb),
             x.tz, x.consent::jsonb
      from unnest(${byPhone.map(() => newId('cnt'))}::text[], ${byPhone.map((c) => c.phoneNumber)}::text[],
                  ${byPhone.map((c) => c.name ?? null)}::text[], ${byPhone.map((c) => c.email ?? null)}::text[],
                  ${byPhone.map((c) => c.company ?? null)}::text[],
                  ${byPhone.map((c) => (c.metadata ? JSON.stringify(c.metadata) : null))}::text[],
                  ${byPhone.map((c) => c.timezone ?? null)}::text[], ${byPhone.map(consentOf)}::text[])
        as x(id, phone, name, email, company, meta, tz, consent)
      on conflict (user_id, phone_number) do update set
        name = case when excluded.name = 'Unknown' then contacts.name else excluded.name end,
        email = coalesce(excluded.email, contacts.email),
        company = coalesce(excluded.company, contacts.company),
        metadata = contacts.metadata || excluded.metadata,
        timezone = coalesce(excluded.timezone, contacts.timezone),
        consent = coalesce(excluded.consent, contacts.consent),
        updated_at = now()
      returning id, phone_number`.execute(db);
    for (const row of rows.rows) contactIdByPhone.set(row.phone_number, row.id);
  }
  return contacts.map((contact) => {
    const id = contactIdByPhone.get(contact.phoneNumber);
    if (!id) throw new Error(`no contact row for ${contact.phoneNumber}`);
    return id;
  });
}
