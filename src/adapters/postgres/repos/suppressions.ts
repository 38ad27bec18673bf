import { sql } from 'kysely';
import type { NewSuppression, SuppressionRow, SuppressionsRepo } from '../../../store/suppressions.js';
import type { Db } from '../database.js';

const COLUMNS = ['phone_number', 'reason', 'source_call_id', 'created_at'] as const;

export class PgSuppressionsRepo implements SuppressionsRepo {
  constructor(private readonly db: Db) {}

  async has(userId: string, phoneNumber: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('suppressions')
      .select('phone_number')
      .where('user_id', '=', userId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
    return row !== undefined;
  }

  async among(userId: string, phoneNumbers: string[]): Promise<string[]> {
    const rows = await sql<{ phone_number: string }>`
    select s.phone_number from suppressions s
    join unnest(${phoneNumbers}::text[]) as n(phone_number) on n.phone_number = s.phone_number
    where s.user_id = ${userId}`.execute(this.db);
    return rows.rows.map((row) => row.phone_number);
  }

  addIfAbsent(entry: NewSuppression): Promise<SuppressionRow | undefined> {
    return this.db
      .insertInto('suppressions')
      .values({
        user_id: entry.userId,
        phone_number: entry.phoneNumber,
        reason: entry.reason,
        source_call_id: entry.sourceCallId,
        created_at: entry.now,
      })
      .onConflict((oc) => oc.columns(['user_id', 'phone_number']).doNothing())
      .returning(COLUMNS)
      .executeTakeFirst();
  }

  get(userId: string, phoneNumber: string): Promise<SuppressionRow | undefined> {
    return this.db
      .selectFrom('suppressions')
      .select(COLUMNS)
      .where('user_id', '=', userId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
  }

  async page(
    userId: string,
    after: { micros: string; phoneNumber: string } | null,
    limit: number,
  ): Promise<Array<SuppressionRow & { micros: string }>> {
    // Ordered as the index suppressions_user_idx reads: newest first, then by number.
    const boundary = after
      ? sql`and (s.created_at < ${sql.raw("timestamptz 'epoch'")} + ${after.micros}::bigint * interval '1 microsecond'
             or (s.created_at = ${sql.raw("timestamptz 'epoch'")} + ${after.micros}::bigint * interval '1 microsecond'
                 and s.phone_number > ${after.phoneNumber}))`
      : sql``;
    const { rows } = await sql<SuppressionRow & { micros: string }>`
        select s.phone_number, s.reason, s.source_call_id, s.created_at,
               ((extract(epoch from s.created_at) * 1000000)::numeric(30, 0))::text as micros
        from suppressions s
        where s.user_id = ${userId} ${boundary}
        order by s.created_at desc, s.phone_number
        limit ${limit}`.execute(this.db);
    return rows;
  }

  async remove(userId: string, phoneNumber: string): Promise<boolean> {
    const deleted = await this.db
      .deleteFrom('suppressions')
      .where('user_id', '=', userId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
    return Number(deleted.numDeletedRows) > 0;
  }
}
