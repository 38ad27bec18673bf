import { sql } from 'kysely';
import type { BatchStatus, CallingWindow } from '../../../domain/batch.js';
import type {
  ActiveBatchRow,
  BatchesRepo,
  BatchListRow,
  BatchRow,
  CountedBatch,
  EndingBatchRow,
  IngestingBatch,
  LockedBatch,
  NewBatch,
  StatusChange,
} from '../../../store/batches.js';
import { type Db, json } from '../database.js';
import { olderThan } from './keyset.js';
import { type LockOrder, takeLock } from './locks.js';

const COUNTED_COLUMNS = [
  'id',
  'status',
  'total',
  'processed',
  'succeeded',
  'failed',
  'cancelled_jobs',
  'suppressed',
  'skipped',
  'user_id',
  'agent_id',
  'webhooks',
  'created_at',
  'started_at',
] as const;

export class PgBatchesRepo implements BatchesRepo {
  constructor(
    private readonly db: Db,
    private readonly order: LockOrder | null,
  ) {}

  async insert(batch: NewBatch): Promise<void> {
    await this.db
      .insertInto('batches')
      .values({
        ...batch,
        // SQL NULL when there is none (json(null) would store a JSON null).
        calling_window: batch.calling_window ? json(batch.calling_window) : undefined,
        webhooks: json(batch.webhooks),
      })
      .execute();
  }

  lockForUser(userId: string, batchId: string): Promise<LockedBatch | undefined> {
    takeLock(this.order, 'batches');
    return this.lockedQuery(batchId).where('user_id', '=', userId).executeTakeFirst();
  }

  lock(batchId: string): Promise<LockedBatch | undefined> {
    takeLock(this.order, 'batches');
    return this.lockedQuery(batchId).executeTakeFirst();
  }

  private lockedQuery(batchId: string) {
    return this.db
      .selectFrom('batches')
      .select([
        'id',
        'status',
        'total',
        'ingested',
        'user_id',
        'agent_id',
        'webhooks',
        'started_at',
        'scheduled_start_at',
        'pause_reason',
        'paused_dependency',
      ])
      .where('id', '=', batchId)
      .forUpdate();
  }

  async pausedFor(key: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('batches')
      .select('id')
      .where('paused_dependency', '=', key)
      .where('status', '=', 'paused')
      .where('pause_reason', '=', 'dependency-unavailable')
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .execute();
    return rows.map((row) => row.id);
  }

  async lockStatus(batchId: string): Promise<BatchRow['status'] | undefined> {
    takeLock(this.order, 'batches');
    const current = await this.db
      .selectFrom('batches')
      .select('status')
      .where('id', '=', batchId)
      .forUpdate()
      .executeTakeFirst();
    return current?.status;
  }

  async lockOrphanedIngestion(now: Date, ignoreLease: boolean): Promise<string | undefined> {
    takeLock(this.order, 'batches');
    let query = this.db.selectFrom('batches').select('id').where('status', '=', 'ingesting');
    // At an embedded start every lease is an orphan's, whenever it would have run out.
    if (!ignoreLease) query = query.where('ingest_lease_until', '<', now);
    const row = await query.orderBy('created_at').limit(1).forUpdate().skipLocked().executeTakeFirst();
    return row?.id;
  }

  async startIngestPass(batchId: string, leaseUntil: Date): Promise<number> {
    const { ingest_passes: passes } = await this.db
      .updateTable('batches')
      .set({ ingest_lease_until: leaseUntil, ingest_passes: sql<number>`ingest_passes + 1` })
      .where('id', '=', batchId)
      .returning('ingest_passes')
      .executeTakeFirstOrThrow();
    return passes;
  }

  ingesting(batchId: string): Promise<IngestingBatch | undefined> {
    return this.db
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
  }

  async noteIngested(batchId: string, ingested: number, leaseUntil: Date, now: Date): Promise<void> {
    await this.db
      .updateTable('batches')
      .set({
        ingested: sql`greatest(ingested, ${ingested})`,
        ingest_lease_until: leaseUntil,
        updated_at: now,
      })
      .where('id', '=', batchId)
      .execute();
  }

  getForUser(userId: string, batchId: string): Promise<BatchRow | undefined> {
    return this.db
      .selectFrom('batches')
      .selectAll()
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  nameForUser(userId: string, batchId: string): Promise<{ id: string; name: string } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['id', 'name'])
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  zoneAndWindow(
    batchId: string,
  ): Promise<{ timezone: string; calling_window: CallingWindow | null } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['timezone', 'calling_window'])
      .where('id', '=', batchId)
      .executeTakeFirst();
  }

  list(
    userId: string,
    filters: { status?: BatchStatus; tag?: string },
    before: { id: string; created_at: Date } | null,
    limit: number,
  ): Promise<BatchListRow[]> {
    let query = this.db
      .selectFrom('batches')
      .select([
        'id',
        'name',
        'status',
        'total',
        'processed',
        'succeeded',
        'failed',
        'created_at',
        'agent_id',
        'priority',
        'tags',
      ])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit);
    if (filters.status) query = query.where('status', '=', filters.status);
    if (filters.tag) query = query.where(sql<boolean>`tags @> array[${filters.tag}]::text[]`);
    if (before) query = query.where(olderThan(before));
    return query.execute();
  }

  position(userId: string, batchId: string): Promise<{ id: string; created_at: Date } | undefined> {
    return this.db
      .selectFrom('batches')
      .select(['id', 'created_at'])
      .where('id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  async moveStatus(batchId: string, from: readonly BatchStatus[], change: StatusChange): Promise<boolean> {
    const done = await this.db
      .updateTable('batches')
      .set(change)
      .where('id', '=', batchId)
      .where('status', 'in', from)
      .executeTakeFirst();
    return Number(done.numUpdatedRows) > 0;
  }

  fail(
    batchId: string,
    from: readonly BatchStatus[],
    failure: { code: string; error: string },
    now: Date,
  ): Promise<Pick<BatchRow, 'user_id' | 'agent_id' | 'webhooks' | 'total' | 'ingested'> | undefined> {
    return this.db
      .updateTable('batches')
      .set({
        status: 'failed',
        error_code: failure.code,
        error: failure.error,
        completed_at: now,
        updated_at: now,
        paused_at: null,
        ingest_lease_until: null,
      })
      .where('id', '=', batchId)
      .where('status', 'in', from)
      .returning(['user_id', 'agent_id', 'webhooks', 'total', 'ingested'])
      .executeTakeFirst();
  }

  async addTo(
    batchId: string,
    counter: 'cancelled_jobs' | 'suppressed' | 'skipped',
    n: number,
    now: Date | null,
  ): Promise<void> {
    await this.db
      .updateTable('batches')
      .set({ [counter]: sql`${sql.ref(counter)} + ${n}`, ...(now ? { updated_at: now } : {}) })
      .where('id', '=', batchId)
      .execute();
  }

  async markClaimed(
    batchId: string,
    to: BatchStatus,
    from: readonly BatchStatus[],
    now: Date,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('batches')
      .set({ status: to, started_at: sql`coalesce(started_at, ${now})`, updated_at: now })
      .where('id', '=', batchId)
      .where('status', 'in', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  counted(batchId: string): Promise<CountedBatch | undefined> {
    return this.db.selectFrom('batches').select(COUNTED_COLUMNS).where('id', '=', batchId).executeTakeFirst();
  }

  async addOutcomes(
    batchId: string,
    tally: { processed: number; succeeded: number },
    now: Date,
  ): Promise<CountedBatch | undefined> {
    return this.db
      .updateTable('batches')
      .set({
        processed: sql`processed + ${tally.processed}`,
        succeeded: sql`succeeded + ${tally.succeeded}`,
        failed: sql`failed + ${tally.processed - tally.succeeded}`,
        updated_at: now,
      })
      .where('id', '=', batchId)
      .returning(COUNTED_COLUMNS)
      .executeTakeFirst();
  }

  async lockOfCalls(callIds: string[]): Promise<EndingBatchRow[]> {
    takeLock(this.order, 'batches');
    const { rows } = await sql<EndingBatchRow>`
          select b.id, b.status, b.max_attempts, b.no_answer_delay_ms, b.busy_delay_ms, b.retry_on_voicemail,
                 b.webhooks
          from batches b
          where b.id in (select batch_id from calls where id = any(${callIds}::text[]) and batch_id is not null)
          order by b.id
          for update of b`.execute(this.db);
    return rows;
  }

  async startedIn(statuses: readonly BatchStatus[], now: Date, limit: number): Promise<ActiveBatchRow[]> {
    return (await this.db
      .selectFrom('batches')
      .select([
        'id',
        'user_id',
        'agent_id',
        'status',
        'priority',
        'max_calls_per_second',
        'timezone',
        'calling_window',
        sql<boolean>`webhooks->>'onCallEvent' is not null`.as('call_events'),
      ])
      .where('status', 'in', statuses)
      .where((eb) => eb.or([eb('scheduled_start_at', 'is', null), eb('scheduled_start_at', '<=', now)]))
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .limit(limit)
      .execute()) as ActiveBatchRow[];
  }

  statuses(batchIds: string[]): Promise<Array<{ id: string; status: BatchStatus }>> {
    return this.db.selectFrom('batches').select(['id', 'status']).where('id', 'in', batchIds).execute();
  }
}
