import { sql } from 'kysely';
import type { BatchContactsRepo } from '../../../store/batch-contacts.js';
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
}
