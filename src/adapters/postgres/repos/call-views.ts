import { sql } from 'kysely';
import type {
  CallListQuery,
  CallViewsRepo,
  CompletedCallRow,
  ListedCallRow,
  PersistentCallRow,
} from '../../../store/call-views.js';
import type { EndedCall } from '../../../store/calls.js';
import type { Db } from '../database.js';

/** What a call's live entry is built from. */
const LIVE_COLUMNS = [
  'id',
  'user_id',
  'agent_id',
  'contact_id',
  'batch_id',
  'status',
  'phone_number',
  'error',
  'duration',
  'created_at',
] as const;

/** A call as its `call.completed` payload and its metrics show it (calls joined to contacts and agents). */
export const COMPLETED_COLUMNS = [
  'calls.id',
  'calls.contact_id',
  'calls.agent_id',
  'calls.batch_id',
  'calls.status',
  'calls.created_at',
  'calls.ended_at',
  'calls.duration',
  'calls.phone_number',
  'calls.transcription',
  'calls.summary',
  'calls.metric_json',
  'calls.ended_reason',
  'calls.failure_source',
  'calls.turns',
  'calls.tool_calls',
  'contacts.name as contact_name',
  'agents.metric_config',
] as const;

export class PgCallViewsRepo implements CallViewsRepo {
  constructor(private readonly db: Db) {}

  /**
   * Keyset pages on (created_at, id), the order of the index calls_user_page_idx: a page starts
   * strictly after the call its cursor names.
   */
  listForUser(userId: string, filters: CallListQuery): Promise<ListedCallRow[]> {
    let query = this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.phone_number',
        'calls.channel',
        'calls.contact_id',
        'contacts.name as contact_name',
        'calls.agent_id',
        'calls.batch_id',
        'calls.ended_reason',
        'calls.failure_source',
        'calls.duration',
        'calls.created_at',
        'calls.ended_at',
      ])
      .where('calls.user_id', '=', userId)
      .orderBy('calls.created_at', 'desc')
      .orderBy('calls.id', 'desc')
      .limit(filters.limit + 1);
    if (filters.status) query = query.where('calls.status', '=', filters.status);
    if (filters.batchId) query = query.where('calls.batch_id', '=', filters.batchId);
    if (filters.singleOnly) query = query.where('calls.batch_id', 'is', null);
    if (filters.phoneNumber) query = query.where('calls.phone_number', '=', filters.phoneNumber);
    if (filters.from) query = query.where('calls.created_at', '>=', filters.from);
    if (filters.to) query = query.where('calls.created_at', '<', filters.to);
    if (filters.cursor) {
      // Compared in SQL, at the column's full precision, against the anchor's own row.
      query = query.where(
        sql<boolean>`(calls.created_at, calls.id) < (select a.created_at, a.id from calls a
          where a.id = ${filters.cursor} and a.user_id = ${userId})`,
      );
    }
    return query.execute();
  }

  async isUsers(userId: string, callId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('calls')
      .select('id')
      .where('id', '=', callId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  liveRowForUser(userId: string, callId: string): Promise<EndedCall | undefined> {
    return this.db
      .selectFrom('calls')
      .select(LIVE_COLUMNS)
      .where('id', '=', callId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  async countOfBatchForUser(userId: string, batchId: string): Promise<number> {
    const stored = await this.db
      .selectFrom('calls')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('batch_id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return stored.n;
  }

  liveRowsOfBatchForUser(userId: string, batchId: string): Promise<EndedCall[]> {
    return this.db
      .selectFrom('calls')
      .select(LIVE_COLUMNS)
      .where('batch_id', '=', batchId)
      .where('user_id', '=', userId)
      .execute();
  }

  persistentForUser(userId: string, callId: string): Promise<PersistentCallRow | undefined> {
    return this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.direction',
        'calls.duration',
        'calls.created_at',
        'calls.ended_at',
        'calls.phone_number',
        'calls.transcription',
        'calls.error',
        'calls.batch_id',
        'calls.contact_id',
        'calls.agent_id',
        'calls.channel',
        'calls.sip_code',
        'calls.minutes_charged',
        'calls.ended_reason',
        'calls.failure_source',
        'calls.turns',
        'calls.tool_calls',
        'contacts.name as contact_name',
        'agents.name as agent_name',
      ])
      .where('calls.id', '=', callId)
      .where('calls.user_id', '=', userId)
      .executeTakeFirst();
  }

  completed(callId: string): Promise<CompletedCallRow> {
    return this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select(COMPLETED_COLUMNS)
      .where('calls.id', '=', callId)
      .executeTakeFirstOrThrow();
  }
}
