import { sql } from 'kysely';
import type { BatchContactsRepo, ExportRow } from '../../../store/batch-contacts.js';
import type { Db } from '../database.js';

export class PgBatchContactsRepo implements BatchContactsRepo {
  constructor(private readonly db: Db) {}

  async dueCount(batchStatuses: readonly string[]): Promise<number> {
    const due = await sql<{ n: number }>`
          select count(*)::int as n from batch_contacts bc join batches b on b.id = bc.batch_id
          where bc.state = 'queued' and bc.next_attempt_at <= now()
            and b.status = any(${batchStatuses}::text[])`.execute(this.db);
    return due.rows[0]?.n ?? 0;
  }

  async waitingForWindow(batchId: string): Promise<number> {
    const row = await this.db
      .selectFrom('batch_contacts')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('batch_id', '=', batchId)
      .where('state', '=', 'queued')
      .where('window_wait', '=', true)
      .executeTakeFirstOrThrow();
    return row.n;
  }

  async exportPage(batchId: string, afterSeq: number, limit: number): Promise<ExportRow[]> {
    const { rows } = await sql<ExportRow>`
          select bc.seq, bc.phone_number, bc.contact_id, ct.name, ct.email, ct.company, bc.state, bc.outcome,
                 bc.attempts, bc.call_id, c.status as call_status, c.duration, c.sip_code, c.ended_at, c.summary, c.metric_json,
                 c.ended_reason, c.turns, bc.timezone, bc.window_wait, bc.next_attempt_at, ct.consent
          from batch_contacts bc
          join contacts ct on ct.id = bc.contact_id
          left join calls c on c.id = bc.call_id
          where bc.batch_id = ${batchId} and bc.seq > ${afterSeq}
          order by bc.seq
          limit ${limit}`.execute(this.db);
    return rows;
  }
}
