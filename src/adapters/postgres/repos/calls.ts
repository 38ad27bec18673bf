import { sql } from 'kysely';
import type {
  CallDetailRow,
  CallEndWrite,
  CallsRepo,
  EndedCallRow,
  LatestCallRow,
  NewBatchCallRow,
  NewCallRow,
  ProgressTarget,
  RecentCallRow,
  RecordedCallRow,
} from '../../../store/calls.js';
import { type Db, json } from '../database.js';

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

  forRecording(callId: string, userId: string | null): Promise<RecordedCallRow | undefined> {
    let query = this.db
      .selectFrom('calls')
      .select(['id', 'status', 'duration', 'transcription', 'user_id', 'provider'])
      .where('id', '=', callId);
    if (userId) query = query.where('user_id', '=', userId);
    return query.executeTakeFirst();
  }

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

  async startedSince(
    batchId: string,
    from: Date,
    recentFrom: Date,
    to: Date,
  ): Promise<{ all: number; recent: number }> {
    const row = await this.db
      .selectFrom('calls')
      .select([
        sql<number>`count(*)::int`.as('all'),
        sql<number>`(count(*) filter (where created_at > ${recentFrom}))::int`.as('recent'),
      ])
      .where('batch_id', '=', batchId)
      .where('created_at', '>', from)
      .where('created_at', '<=', to)
      .executeTakeFirstOrThrow();
    return { all: row.all, recent: row.recent };
  }

  async callsUp(
    batchId: string,
    sample: number,
    slotBefore: Date,
  ): Promise<{ live: number; youngest: Date | null; mean_ms: number | null; held: number } | undefined> {
    // `held`: a claimed call's created_at is its slot until the send rewrites it, and its dial
    // record stays 'waiting' until then; the SIP provider keeps it there while the trunk is full.
    const { rows } = await sql<{ live: number; youngest: Date | null; mean_ms: number | null; held: number }>`
      select
        (select count(*)::int from calls where batch_id = ${batchId} and status = 'ONGOING') as live,
        (select max(created_at) from calls where batch_id = ${batchId} and status = 'ONGOING') as youngest,
        (select avg(extract(epoch from ended_at - created_at) * 1000)::float8 from (
          select created_at, ended_at from calls
          where batch_id = ${batchId} and ended_at is not null
          order by created_at desc limit ${sample}) ended) as mean_ms,
        (select count(*)::int from calls c join dials d on d.call_id = c.id
          where c.batch_id = ${batchId} and c.status = 'ONGOING' and d.state = 'waiting'
            and c.created_at < ${slotBefore}) as held`.execute(this.db);
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

  async usageByDay(userId: string, since: Date): Promise<Array<{ day: string; minutes: number }>> {
    const { rows } = await sql<{ day: string; minutes: number }>`
        select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, sum(minutes_charged)::int as minutes
        from calls
        where user_id = ${userId} and created_at >= ${since}
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
        'calls.failure_source',
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

  async ongoingOfContact(contactId: string): Promise<string | undefined> {
    const ongoing = await this.db
      .selectFrom('calls')
      .select('id')
      .where('contact_id', '=', contactId)
      .where('status', '=', 'ONGOING')
      .executeTakeFirst();
    return ongoing?.id;
  }

  async singleCallsOfContact(contactId: string): Promise<number> {
    const earlier = await this.db
      .selectFrom('calls')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('contact_id', '=', contactId)
      .where('batch_id', 'is', null)
      .executeTakeFirstOrThrow();
    return earlier.n;
  }

  async insert(call: NewCallRow): Promise<void> {
    await this.db
      .insertInto('calls')
      .values({
        id: call.id,
        user_id: call.user_id,
        agent_id: call.agent_id,
        contact_id: call.contact_id,
        batch_id: null,
        status: 'ONGOING',
        phone_number: call.phone_number,
        attempt: call.attempt,
        provider: call.provider,
        channel: call.channel,
        error: null,
        duration: null,
        transcription: json(null),
        summary: null,
        metric_json: json(null),
        status_callback_url: call.status_callback_url,
        status_callback_events: json(call.status_callback_events),
        ...(call.variables ? { variables: json(call.variables) } : {}),
        created_at: call.created_at,
        answered_at: call.answered_at,
        ended_at: null,
      })
      .execute();
  }

  async insertBatchCalls(
    batch: { id: string; userId: string; agentId: string },
    calls: NewBatchCallRow[],
    provider: string,
    now: Date,
  ): Promise<string[]> {
    const inserted = await sql<{ id: string }>`
      insert into calls (id, user_id, agent_id, contact_id, batch_id, batch_seq, status, phone_number, attempt, provider, created_at, updated_at)
      select x.id, ${batch.userId}, ${batch.agentId}, x.contact_id, ${batch.id}, x.seq, 'ONGOING', x.phone, x.attempt, ${provider}, x.start_at, ${now}
      from unnest(${calls.map((c) => c.callId)}::text[], ${calls.map((c) => c.contactId)}::text[],
                  ${calls.map((c) => c.phoneNumber)}::text[], ${calls.map((c) => c.attempt)}::int[],
                  ${calls.map((c) => c.startAt.toISOString())}::timestamptz[], ${calls.map((c) => c.seq)}::int[])
        as x(id, contact_id, phone, attempt, start_at, seq)
      on conflict (contact_id) where status = 'ONGOING' do nothing
      returning id`.execute(this.db);
    return inserted.rows.map((row) => row.id);
  }

  async end(ends: CallEndWrite[], now: Date): Promise<EndedCallRow[]> {
    const { rows } = await sql<EndedCallRow>`
          update calls c set
            status = x.status, duration = x.duration::int, answered_at = x.answered_at::timestamptz,
            ended_at = x.ended_at::timestamptz, error = x.error, transcription = x.transcription::jsonb,
            minutes_charged = x.charge::int, updated_at = ${now},
            sip_code = x.sip_code::int, ended_reason = x.ended_reason, failure_source = x.failure_source,
            turns = x.turns::jsonb, tool_calls = x.tool_calls::jsonb
          from unnest(
            ${ends.map((e) => e.id)}::text[], ${ends.map((e) => e.status)}::text[], ${ends.map((e) => String(e.duration))}::text[],
            ${ends.map((e) => e.answeredAt?.toISOString() ?? null)}::text[], ${ends.map((e) => e.endedAt.toISOString())}::text[],
            ${ends.map((e) => e.error)}::text[], ${ends.map((e) => e.transcription)}::text[],
            ${ends.map((e) => String(e.charge))}::text[],
            ${ends.map((e) => (e.sipCode == null ? null : String(e.sipCode)))}::text[],
            ${ends.map((e) => e.endedReason)}::text[],
            ${ends.map((e) => e.failureSource)}::text[],
            ${ends.map((e) => e.turns)}::text[],
            ${ends.map((e) => e.toolCalls)}::text[]
          ) as x(id, status, duration, answered_at, ended_at, error, transcription, charge, sip_code,
                 ended_reason, failure_source, turns, tool_calls)
          where c.id = x.id and c.status = 'ONGOING'
          returning c.id, c.user_id, c.agent_id, c.contact_id, c.batch_id, c.status, c.phone_number, c.error,
                    c.duration, c.created_at, c.status_callback_url, c.status_callback_events, c.batch_seq, c.attempt, c.minutes_charged,
                    c.failure_source`.execute(this.db);
    return rows;
  }

  async deleteOngoing(callId: string): Promise<boolean> {
    const removed = await this.db
      .deleteFrom('calls')
      .where('id', '=', callId)
      .where('status', '=', 'ONGOING')
      .executeTakeFirst();
    return Number(removed.numDeletedRows) > 0;
  }
}
