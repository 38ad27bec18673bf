import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import { type BatchContactInput, distinctContacts } from '../domain/contacts.js';
import { newId } from '../domain/ids.js';
import { INGEST_CHUNK, INGEST_LEASE_MS } from './batches.js';
import type { Deps } from './deps.js';

/**
 * Writes a batch's contacts in chunks, each chunk in one transaction together with the batch's
 * `ingested` counter, so a crash loses at most the chunk in progress and a restart resumes at the
 * counter. Every write is idempotent (contacts are upserted, batch rows are inserted with ON
 * CONFLICT DO NOTHING), so two processes that both ingest one batch still write each row once.
 */
export class BatchIngester {
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly deps: Deps) {}

  /** Starts ingesting in the background (used right after the 202, with the already parsed contacts). */
  start(batchId: string, contacts?: BatchContactInput[]): void {
    if (this.running.has(batchId)) return;
    const work = this.ingest(batchId, contacts)
      .catch((error: unknown) =>
        this.deps.logger.error({ err: error, batchId }, 'ingestion stopped; another pass resumes it'),
      )
      .finally(() => this.running.delete(batchId));
    this.running.set(batchId, work);
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
        const row = await trx
          .selectFrom('batches')
          .select('id')
          .where('status', '=', 'ingesting')
          .where('ingest_lease_until', '<', options.ignoreLease ? new Date(8.64e15) : now)
          .orderBy('created_at')
          .limit(1)
          .forUpdate()
          .skipLocked()
          .executeTakeFirst();
        if (!row || this.running.has(row.id)) return null;
        await trx
          .updateTable('batches')
          .set({ ingest_lease_until: new Date(now.getTime() + INGEST_LEASE_MS) })
          .where('id', '=', row.id)
          .execute();
        return row.id;
      });
      if (!claimed) break;
      this.deps.logger.info({ batchId: claimed }, 'resuming an interrupted ingestion');
      this.start(claimed);
      taken++;
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
      .select(['id', 'user_id', 'status', 'ingested', 'total', 'scheduled_start_at'])
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
    for (let from = batch.ingested; from < contacts.length; from += INGEST_CHUNK) {
      const chunk = contacts.slice(from, from + INGEST_CHUNK);
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
        await writeChunk(trx, {
          batchId,
          userId: batch.user_id,
          firstSeq: from,
          contacts: chunk,
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
      if (!proceed) return;
      await yieldToEventLoop();
    }
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      const next = startAt && startAt.getTime() > now.getTime() ? 'scheduled' : 'pending';
      const done = await trx
        .updateTable('batches')
        .set({ status: next, ingest_lease_until: null, updated_at: now })
        .where('id', '=', batchId)
        .where('status', '=', 'ingesting')
        .executeTakeFirst();
      if (Number(done.numUpdatedRows) > 0)
        await trx.deleteFrom('batch_payloads').where('batch_id', '=', batchId).execute();
    });
    this.deps.logger.info({ batchId, contacts: contacts.length }, 'batch ingested');
  }
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Chunk {
  batchId: string;
  userId: string;
  firstSeq: number;
  contacts: BatchContactInput[];
  dueAt: Date;
}

/**
 * One chunk in three statements: contacts given by an id of the user's are updated in place;
 * the rest are upserted by the user's phone number; then the batch's rows are inserted.
 */
async function writeChunk(trx: Db, chunk: Chunk): Promise<void> {
  const givenIds = chunk.contacts.map((c) => c.id).filter((id): id is string => typeof id === 'string');
  const known = new Set<string>();
  if (givenIds.length > 0) {
    const rows = await trx
      .selectFrom('contacts')
      .select('id')
      .where('user_id', '=', chunk.userId)
      .where('id', 'in', givenIds)
      .execute();
    for (const row of rows) known.add(row.id);
  }

  const byId: BatchContactInput[] = [];
  const byPhone: BatchContactInput[] = [];
  for (const contact of chunk.contacts) (contact.id && known.has(contact.id) ? byId : byPhone).push(contact);

  const contactIdByPhone = new Map<string, string>();
  if (byId.length > 0) {
    await sql`
      update contacts c set
        name = case when x.name is null then c.name else x.name end,
        email = coalesce(x.email, c.email),
        company = coalesce(x.company, c.company),
        metadata = c.metadata || coalesce(x.meta::jsonb, '{}'::jsonb),
        updated_at = now()
      from unnest(${byId.map((c) => c.id)}::text[], ${byId.map((c) => c.name ?? null)}::text[],
                  ${byId.map((c) => c.email ?? null)}::text[], ${byId.map((c) => c.company ?? null)}::text[],
                  ${byId.map((c) => (c.metadata ? JSON.stringify(c.metadata) : null))}::text[])
        as x(id, name, email, company, meta)
      where c.id = x.id and c.user_id = ${chunk.userId}`.execute(trx);
    for (const contact of byId) if (contact.id) contactIdByPhone.set(contact.phoneNumber, contact.id);
  }
  if (byPhone.length > 0) {
    const rows = await sql<{ id: string; phone_number: string }>`
      insert into contacts (id, user_id, phone_number, name, email, company, metadata)
      select x.id, ${chunk.userId}, x.phone, coalesce(x.name, 'Unknown'), x.email, x.company, coalesce(x.meta::jsonb, '{}'::jsonb)
      from unnest(${byPhone.map(() => newId('cnt'))}::text[], ${byPhone.map((c) => c.phoneNumber)}::text[],
                  ${byPhone.map((c) => c.name ?? null)}::text[], ${byPhone.map((c) => c.email ?? null)}::text[],
                  ${byPhone.map((c) => c.company ?? null)}::text[],
                  ${byPhone.map((c) => (c.metadata ? JSON.stringify(c.metadata) : null))}::text[])
        as x(id, phone, name, email, company, meta)
      on conflict (user_id, phone_number) do update set
        name = case when excluded.name = 'Unknown' then contacts.name else excluded.name end,
        email = coalesce(excluded.email, contacts.email),
        company = coalesce(excluded.company, contacts.company),
        metadata = contacts.metadata || excluded.metadata,
        updated_at = now()
      returning id, phone_number`.execute(trx);
    for (const row of rows.rows) contactIdByPhone.set(row.phone_number, row.id);
  }

  const seqs: number[] = [];
  const ids: string[] = [];
  const phones: string[] = [];
  chunk.contacts.forEach((contact, index) => {
    const id = contactIdByPhone.get(contact.phoneNumber);
    if (!id) throw new Error(`no contact row for ${contact.phoneNumber}`);
    seqs.push(chunk.firstSeq + index);
    ids.push(id);
    phones.push(contact.phoneNumber);
  });
  await sql`
    insert into batch_contacts (batch_id, seq, contact_id, phone_number, state, next_attempt_at)
    select ${chunk.batchId}, x.seq, x.contact_id, x.phone, 'queued', ${chunk.dueAt}
    from unnest(${seqs}::int[], ${ids}::text[], ${phones}::text[]) as x(seq, contact_id, phone)
    on conflict do nothing`.execute(trx);
}
