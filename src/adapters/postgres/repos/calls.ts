import { sql } from 'kysely';
import type {
  CallDetailRow,
  CallsRepo,
  LatestCallRow,
  ProgressTarget,
  RecentCallRow,
} from '../../../store/calls.js';
import type { Db } from '../database.js';

/** A call's columns in the lists of a batch's calls. */
const LISTED_COLUMNS = [
  'calls.id',
  'calls.status',
  'calls.duration',
  'calls.created_at',
  'calls.phone_number',
] as const;

export class PgCallsRepo implements CallsRepo {
  constructor(private readonly db: Db) {}

  async ownerOf(callId: string): Promise<string | undefined> {
    const call = await this.db
      .selectFrom('calls')
      .select('user_id')
      .where('id', '=', callId)
      .executeTakeFirst();
    return call?.user_id;
  }

  recentOfBatch(batchId: string, limit: number | null): Promise<RecentCallRow[]> {
    let query = this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .select([...LISTED_COLUMNS, 'contacts.name as contact_name'])
      .where('calls.batch_id', '=', batchId)
      .orderBy('calls.created_at', 'desc')
      .orderBy('calls.id', 'desc');
    if (limit !== null) query = query.limit(limit);
    return query.execute();
  }

  async countCreatedBetween(batchId: string, from: Date, to: Date): Promise<number> {
    const row = await this.db
      .selectFrom('calls')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('batch_id', '=', batchId)
      .where('created_at', '>', from)
      .where('created_at', '<=', to)
      .executeTakeFirstOrThrow();
    return row.n;
  }

  async callsUp(
    batchId: string,
    sample: number,
  ): Promise<{ live: number; youngest: Date | null; mean_ms: number | null } | undefined> {
    const { rows } = await sql<{ live: number; youngest: Date | null; mean_ms: number | null }>`
      select
        (select count(*)::int from calls where batch_id = ${batchId} and status = 'ONGOING') as live,
        (select max(created_at) from calls where batch_id = ${batchId} and status = 'ONGOING') as youngest,
        (select avg(extract(epoch from ended_at - created_at) * 1000)::float8 from (
          select created_at, ended_at from calls
          where batch_id = ${batchId} and ended_at is not null
          order by created_at desc limit ${sample}) ended) as mean_ms`.execute(this.db);
    return rows[0];
  }

  async perSecond(batchId: string): Promise<Array<{ second: number; count: number }>> {
    const { rows } = await sql<{ second: number; count: number }>`
        with last as (select max(created_at) as at from calls where batch_id = ${batchId})
        select extract(epoch from date_trunc('second', c.created_at))::bigint as second, count(*)::int as count
        from calls c, last
        where c.batch_id = ${batchId} and c.created_at > last.at - interval '10 minutes'
        group by 1 order by 1`.execute(this.db);
    return rows;
  }

  async countByStatus(batchId: string): Promise<Array<{ status: string; count: number }>> {
    const { rows } = await sql<{ status: string; count: number }>`
        select status, count(*)::int as count from calls where batch_id = ${batchId} group by 1`.execute(
      this.db,
    );
    return rows;
  }

  latestOfBatchForUser(userId: string, batchId: string): Promise<LatestCallRow[]> {
    return this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .select([
        ...LISTED_COLUMNS,
        'calls.summary',
        'calls.metric_json',
        sql<boolean>`coalesce(jsonb_array_length(calls.transcription) > 0, false)`.as('has_transcript'),
        'contacts.name as contact_name',
      ])
      .where('calls.batch_id', '=', batchId)
      .where('calls.user_id', '=', userId)
      .orderBy('calls.created_at', 'desc')
      .orderBy('calls.id', 'desc')
      .limit(25)
      .execute();
  }

  detailForUser(userId: string, callId: string): Promise<CallDetailRow | undefined> {
    return this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .leftJoin('batches', 'batches.id', 'calls.batch_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.batch_id',
        'calls.phone_number',
        'calls.channel',
        'calls.attempt',
        'calls.duration',
        'calls.error',
        'calls.created_at',
        'calls.answered_at',
        'calls.ended_at',
        'calls.transcription',
        'calls.summary',
        'calls.metric_json',
        'calls.analysis_status',
        'calls.sip_code',
        'calls.ended_reason',
        'calls.turns',
        'calls.tool_calls',
        'contacts.name as contact_name',
        'contacts.consent',
        'agents.name as agent_name',
        'batches.name as batch_name',
      ])
      .where('calls.id', '=', callId)
      .where('calls.user_id', '=', userId)
      .executeTakeFirst();
  }

  async progressTargets(callIds: string[], event: string): Promise<ProgressTarget[]> {
    // Most campaigns ask for none of these: the filter keeps their sends at one cheap read.
    const { rows } = await sql<ProgressTarget>`
        select c.id, c.user_id, c.agent_id, c.contact_id, c.batch_id, c.phone_number, c.created_at,
               ct.name as contact_name,
               case when c.batch_id is not null then b.webhooks->>'onCallEvent' else c.status_callback_url end as url
        from calls c
        join contacts ct on ct.id = c.contact_id
        left join batches b on b.id = c.batch_id
        where c.id = any(${callIds}::text[])
          and case when c.batch_id is not null then b.webhooks->>'onCallEvent' is not null
                   else c.status_callback_url is not null
                        and coalesce(c.status_callback_events, '["call.completed"]'::jsonb) ? ${event} end
          and not exists (select 1 from webhook_deliveries w where w.call_id = c.id and w.event = ${event})`.execute(
      this.db,
    );
    return rows;
  }
}
