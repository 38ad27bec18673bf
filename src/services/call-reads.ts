import { sql } from 'kysely';
import type { CallChannel, CallStatus } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import { E164_MESSAGE, normalizeE164 } from '../domain/phone.js';
import type { Deps } from './deps.js';

/** One call of `GET /api/v1/calls`: what a list shows; the whole call is `GET /api/v1/call/check-status`. */
export interface CallListItem {
  callId: string;
  status: CallStatus;
  phoneNumber: string;
  /** 'web': the dashboard's Talk to this agent; 'phone': every other call. */
  channel: CallChannel;
  contactId: string;
  contactName: string;
  agentId: string;
  /** The campaign the call belongs to; null for a single call (`POST /api/v1/call/dial`). */
  batchId: string | null;
  /** Seconds of connected time; null while the call is up or when it never connected. */
  duration: number | null;
  createdAt: string;
  endedAt: string | null;
}

export interface CallListFilters {
  status?: CallStatus;
  batchId?: string;
  /** E.164; other spellings are refused (400 naming `phoneNumber`). */
  phoneNumber?: string;
  /** Calls created at or after this instant. */
  from?: Date;
  /** Calls created before this instant (half-open, so consecutive windows never share a call). */
  to?: Date;
  /** Only calls placed outside any campaign (the dashboard's single calls); not an API filter. */
  singleOnly?: boolean;
  /** The X-Next-Cursor of the previous page: the callId of its last call. */
  cursor?: string;
  limit: number;
}

const badParameter = (field: string, message: string) =>
  new AppError('INVALID_PARAMETER', `${field} ${message}`, { fieldErrors: { [field]: [message] } });

/**
 * The user's calls, single and campaign ones, newest first. Pages are keyset pages on
 * (created_at, id), the order of the index calls_user_page_idx: a page starts strictly after the
 * call its cursor names, so calls created meanwhile (always newer, on page 1) never shift a later
 * page, and no call is shown twice or skipped.
 */
export class CallReads {
  constructor(private readonly deps: Pick<Deps, 'db'>) {}

  async list(
    userId: string,
    filters: CallListFilters,
  ): Promise<{ items: CallListItem[]; nextCursor: string | null }> {
    const { db } = this.deps;
    let phoneNumber: string | undefined;
    if (filters.phoneNumber !== undefined) {
      phoneNumber = normalizeE164(filters.phoneNumber) ?? undefined;
      if (!phoneNumber) throw badParameter('phoneNumber', E164_MESSAGE);
    }
    if (filters.from && filters.to && filters.to.getTime() <= filters.from.getTime()) {
      throw badParameter('to', 'must be later than from');
    }
    let query = db
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
    if (phoneNumber) query = query.where('calls.phone_number', '=', phoneNumber);
    if (filters.from) query = query.where('calls.created_at', '>=', filters.from);
    if (filters.to) query = query.where('calls.created_at', '<', filters.to);
    if (filters.cursor) {
      // Compared in SQL, at the column's full precision, against the anchor's own row.
      query = query.where(
        sql<boolean>`(calls.created_at, calls.id) < (select a.created_at, a.id from calls a
          where a.id = ${filters.cursor} and a.user_id = ${userId})`,
      );
    }
    const rows = await query.execute();
    // An empty page may come from a cursor that names no call of the user's: that is a bad
    // request, not the end of the list. Asked only then, so a full page costs one query.
    if (filters.cursor && rows.length === 0) {
      const anchor = await db
        .selectFrom('calls')
        .select('id')
        .where('id', '=', filters.cursor)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      if (!anchor) throw badParameter('cursor', 'is not the X-Next-Cursor of a previous page');
    }
    const page = rows.slice(0, filters.limit);
    return {
      items: page.map((row) => ({
        callId: row.id,
        status: row.status,
        phoneNumber: row.phone_number,
        channel: row.channel,
        contactId: row.contact_id,
        contactName: row.contact_name,
        agentId: row.agent_id,
        batchId: row.batch_id,
        duration: row.duration,
        createdAt: row.created_at.toISOString(),
        endedAt: row.ended_at ? row.ended_at.toISOString() : null,
      })),
      nextCursor: rows.length > filters.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }
}
