import { sql } from 'kysely';
import type { BatchContactState } from '../../../domain/batch.js';
import type {
  BatchContactsRepo,
  ContactMove,
  DueContactRow,
  ExportRow,
  QueueWaits,
} from '../../../store/batch-contacts.js';
import type { Db } from '../database.js';
import { type LockOrder, takeLock } from './locks.js';

export class PgBatchContactsRepo implements BatchContactsRepo {
  /** `order` is null on the pool, where a row lock would end with its statement. */
  constructor(
    private readonly db: Db,
    private readonly order: LockOrder | null = null,
  ) {}

  async lockDue(
    batch: { id: string; userId: string },
    now: Date,
    taken: number[],
    limit: number,
  ): Promise<DueContactRow[]> {
    takeLock(this.order, 'contacts');
    const { rows } = await sql<DueContactRow>`
          select bc.seq, bc.contact_id, bc.phone_number, bc.attempts, bc.timezone, c.name as contact_name,
                 c.company, c.metadata,
                 exists (select 1 from suppressions s
                         where s.user_id = ${batch.userId} and s.phone_number = bc.phone_number) as suppressed
          from batch_contacts bc join contacts c on c.id = bc.contact_id
          where bc.batch_id = ${batch.id} and bc.state = 'queued' and bc.next_attempt_at <= ${now}
            and bc.seq <> all(${taken}::int[])
          order by bc.next_attempt_at, bc.seq
          limit ${limit}
          for update of bc skip locked`.execute(this.db);
    return rows;
  }

  async dueCount(batchStatuses: readonly string[]): Promise<number> {
    const due = await sql<{ n: number }>`
          select count(*)::int as n from batch_contacts bc join batches b on b.id = bc.batch_id
          where bc.state = 'queued' and bc.next_attempt_at <= now()
            and b.status = any(${batchStatuses}::text[])`.execute(this.db);
    return due.rows[0]?.n ?? 0;
  }

  async queueWaits(batchId: string, now: Date): Promise<QueueWaits> {
    // Each part reads one partial index: batch_contacts_due_idx (queued, by due time) for the due
    // and the retries, batch_contacts_window_wait_idx for the window; a batch's whole queue is
    // never counted (at the start every contact is due, and only whether one is matters).
    const { rows } = await sql<QueueWaits>`
      select
        exists (select 1 from batch_contacts where batch_id = ${batchId} and state = 'queued'
                and not window_wait and next_attempt_at <= ${now}) as due_now,
        (select count(*)::int from batch_contacts where batch_id = ${batchId} and state = 'queued'
                and not window_wait and next_attempt_at > ${now}) as retrying,
        (select max(next_attempt_at) from batch_contacts where batch_id = ${batchId} and state = 'queued'
                and not window_wait and next_attempt_at > ${now}) as last_retry_at,
        (select count(*)::int from batch_contacts where batch_id = ${batchId} and state = 'queued'
                and window_wait) as waiting_for_window,
        (select min(next_attempt_at) from batch_contacts where batch_id = ${batchId} and state = 'queued'
                and window_wait) as next_opening`.execute(this.db);
    const row = rows[0];
    return {
      due_now: row?.due_now ?? false,
      retrying: row?.retrying ?? 0,
      last_retry_at: row?.last_retry_at ? new Date(row.last_retry_at) : null,
      waiting_for_window: row?.waiting_for_window ?? 0,
      next_opening: row?.next_opening ? new Date(row.next_opening) : null,
    };
  }

  async serviceFailuresOf(contacts: Array<{ batchId: string; seq: number }>): Promise<Map<string, number>> {
    if (contacts.length === 0) return new Map();
    const { rows } = await sql<{ batch_id: string; seq: number; service_failures: number }>`
          select bc.batch_id, bc.seq, bc.service_failures
          from batch_contacts bc
          join unnest(${contacts.map((c) => c.batchId)}::text[], ${contacts.map((c) => c.seq)}::int[]) as x(batch_id, seq)
            on bc.batch_id = x.batch_id and bc.seq = x.seq`.execute(this.db);
    return new Map(rows.map((row) => [`${row.batch_id}/${row.seq}`, row.service_failures]));
  }

  async exportPage(batchId: string, afterSeq: number, limit: number): Promise<ExportRow[]> {
    const { rows } = await sql<ExportRow>`
          select bc.seq, bc.phone_number, bc.contact_id, ct.name, ct.email, ct.company, bc.state, bc.outcome,
                 bc.attempts, bc.call_id, c.status as call_status, c.duration, c.sip_code, c.ended_at, c.summary, c.metric_json,
                 c.ended_reason, c.failure_source, c.turns, bc.timezone, bc.window_wait, bc.next_attempt_at, ct.consent
          from batch_contacts bc
          join contacts ct on ct.id = bc.contact_id
          left join calls c on c.id = bc.call_id
          where bc.batch_id = ${batchId} and bc.seq > ${afterSeq}
          order by bc.seq
          limit ${limit}`.execute(this.db);
    return rows;
  }

  async cancelQueued(batchId: string, from: readonly BatchContactState[]): Promise<number> {
    const removed = await this.db
      .updateTable('batch_contacts')
      .set({ state: 'cancelled', lease_until: null, window_wait: false })
      .where('batch_id', '=', batchId)
      .where('state', 'in', from)
      .executeTakeFirst();
    return Number(removed.numUpdatedRows);
  }

  async claim(
    batchId: string,
    claims: Array<{ seq: number; callId: string; leaseUntil: Date }>,
    from: readonly BatchContactState[],
  ): Promise<void> {
    await sql`
    update batch_contacts bc set state = 'dialing', attempts = bc.attempts + 1, call_id = x.call_id,
      lease_until = x.lease, window_wait = false
    from unnest(${claims.map((c) => c.seq)}::int[], ${claims.map((c) => c.callId)}::text[],
                ${claims.map((c) => c.leaseUntil.toISOString())}::timestamptz[])
      as x(seq, call_id, lease)
    where bc.batch_id = ${batchId} and bc.seq = x.seq and bc.state = any(${from}::text[])`.execute(this.db);
  }

  async defer(
    batchId: string,
    defers: Array<{ seq: number; at: Date; windowWait: boolean }>,
    from: readonly BatchContactState[],
  ): Promise<void> {
    await sql`
    update batch_contacts bc set next_attempt_at = x.at, window_wait = x.wait
    from unnest(${defers.map((d) => d.seq)}::int[], ${defers.map((d) => d.at.toISOString())}::timestamptz[],
                ${defers.map((d) => d.windowWait)}::boolean[]) as x(seq, at, wait)
    where bc.batch_id = ${batchId} and bc.seq = x.seq and bc.state = any(${from}::text[])`.execute(this.db);
  }

  async suppress(batchId: string, seqs: number[], from: readonly BatchContactState[]): Promise<number> {
    const moved = await this.db
      .updateTable('batch_contacts')
      .set({ state: 'suppressed', window_wait: false, lease_until: null })
      .where('batch_id', '=', batchId)
      .where('seq', 'in', seqs)
      .where('state', 'in', from)
      .executeTakeFirst();
    return Number(moved.numUpdatedRows);
  }

  async returnOne(
    call: { batchId: string; seq: number; callId: string },
    from: readonly BatchContactState[],
  ): Promise<void> {
    await this.db
      .updateTable('batch_contacts')
      .set({ state: 'queued', attempts: sql`attempts - 1`, call_id: null, lease_until: null })
      .where('batch_id', '=', call.batchId)
      .where('seq', '=', call.seq)
      .where('call_id', '=', call.callId)
      .where('state', 'in', from)
      .execute();
  }

  async queue(chunk: {
    batchId: string;
    rows: Array<{ seq: number; contactId: string; phone: string; timezone: string | null; skipped: boolean }>;
    dueAt: Date;
  }): Promise<string[]> {
    const { rows } = chunk;
    const inserted = await sql<{ state: string }>`
    insert into batch_contacts (batch_id, seq, contact_id, phone_number, state, next_attempt_at, timezone)
    select ${chunk.batchId}, x.seq, x.contact_id, x.phone, case when x.skipped then 'skipped' else 'queued' end,
           ${chunk.dueAt}, x.tz
    from unnest(${rows.map((r) => r.seq)}::int[], ${rows.map((r) => r.contactId)}::text[],
                ${rows.map((r) => r.phone)}::text[], ${rows.map((r) => r.timezone)}::text[],
                ${rows.map((r) => r.skipped)}::boolean[]) as x(seq, contact_id, phone, tz, skipped)
    on conflict do nothing
    returning state`.execute(this.db);
    return inserted.rows.map((row) => row.state);
  }

  async anyQueued(batchId: string): Promise<boolean> {
    const left = await this.db
      .selectFrom('batch_contacts')
      .select('seq')
      .where('batch_id', '=', batchId)
      .where('state', '=', 'queued')
      .limit(1)
      .executeTakeFirst();
    return left !== undefined;
  }

  async anyOpen(batchId: string): Promise<boolean> {
    const open = await this.db
      .selectFrom('batch_contacts')
      .select('seq')
      .where('batch_id', '=', batchId)
      .where('state', 'in', ['queued', 'dialing'])
      .limit(1)
      .executeTakeFirst();
    return open !== undefined;
  }

  async advance(
    moves: ContactMove[],
    from: readonly BatchContactState[],
  ): Promise<Array<{ batch_id: string; call_id: string }>> {
    const moved = await sql<{ batch_id: string; call_id: string }>`
    update batch_contacts bc set
      state = case when x.retry then 'queued' else 'done' end,
      outcome = x.outcome, lease_until = null,
      next_attempt_at = coalesce(x.next_at::timestamptz, bc.next_attempt_at),
      attempts = case when x.service then greatest(bc.attempts - 1, 0) else bc.attempts end,
      service_failures = case when x.service then bc.service_failures + 1 else 0 end
    from unnest(
      ${moves.map((m) => m.batchId)}::text[], ${moves.map((m) => m.seq)}::int[], ${moves.map((m) => m.callId)}::text[],
      ${moves.map((m) => m.retry)}::boolean[], ${moves.map((m) => m.nextAt?.toISOString() ?? null)}::text[],
      ${moves.map((m) => m.outcome)}::text[], ${moves.map((m) => m.serviceFailure)}::boolean[]
    ) as x(batch_id, seq, call_id, retry, next_at, outcome, service)
    where bc.batch_id = x.batch_id and bc.seq = x.seq and bc.state = any(${from}::text[])
      and bc.call_id = x.call_id
    returning bc.batch_id, bc.call_id`.execute(this.db);
    return moved.rows;
  }
}
