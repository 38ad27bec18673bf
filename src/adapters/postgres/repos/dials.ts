import { type RawBuilder, sql } from 'kysely';
import { type CallEndedEvent, type DialRecord, type DialState, HAND_OFF_OWNER } from '../../../ports.js';
import type { DialsRepo, SendingCall, UnsettledCall, UnsettledQuery } from '../../../store/dials.js';
import type { Db } from '../database.js';

/** The columns a dial record is read from, with its owner's heartbeat. */
export const DIAL_RECORD_COLUMNS = sql`d.call_id as dial_call_id, d.owner as dial_owner,
  d.provider as dial_provider, d.state as dial_state, d.created_at as dial_created_at,
  d.sent_at as dial_sent_at, d.answered_at as dial_answered_at, d.outcome as dial_outcome,
  o.renewed_at as dial_owner_seen_at`;

export interface DialRecordRow {
  dial_call_id: string | null;
  dial_owner: string | null;
  dial_provider: string | null;
  dial_state: DialState | null;
  dial_created_at: Date | null;
  dial_sent_at: Date | null;
  dial_answered_at: Date | null;
  dial_outcome: StoredEnd | null;
  dial_owner_seen_at: Date | null;
}

export type StoredEnd = Omit<CallEndedEvent, 'answeredAt' | 'endedAt'> & {
  answeredAt: string | null;
  endedAt: string;
};

/** A dial record from a row selected with DIAL_RECORD_COLUMNS (left-joined: null when there is none). */
export function dialRecordFrom(row: DialRecordRow): DialRecord | null {
  if (!row.dial_call_id || !row.dial_owner || !row.dial_state || !row.dial_created_at) return null;
  const outcome = row.dial_outcome;
  return {
    callId: row.dial_call_id,
    owner: row.dial_owner,
    provider: row.dial_provider ?? '',
    state: row.dial_state,
    createdAt: new Date(row.dial_created_at),
    sentAt: row.dial_sent_at ? new Date(row.dial_sent_at) : null,
    answeredAt: row.dial_answered_at ? new Date(row.dial_answered_at) : null,
    ended: outcome
      ? {
          ...outcome,
          answeredAt: outcome.answeredAt ? new Date(outcome.answeredAt) : null,
          endedAt: new Date(outcome.endedAt),
        }
      : null,
    ownerSeenAt: row.dial_owner_seen_at ? new Date(row.dial_owner_seen_at) : null,
  };
}

/**
 * Writes the waiting records of calls just created, inside the transaction that creates them: from
 * its first moment a call names the process that will dial it.
 */
export async function openDials(
  trx: Db,
  owner: string,
  calls: Array<{ callId: string; provider: string }>,
  at: Date,
): Promise<void> {
  if (calls.length === 0) return;
  await sql`
    insert into dials (call_id, owner, provider, state, created_at)
    select x.id, ${owner}, x.provider, 'waiting', ${at}
    from unnest(${calls.map((c) => c.callId)}::text[], ${calls.map((c) => c.provider)}::text[]) as x(id, provider)
    on conflict (call_id) do nothing`.execute(trx);
}

/**
 * Writes the record of a call that is up from its first moment (a web call: the browser is
 * already on the line), sent and answered at `at`, inside the transaction that creates the call.
 * Nothing waits to be placed, so no sweep ever dials it; a gone owner's call is settled as cut off.
 */
export async function openAnsweredDial(
  trx: Db,
  owner: string,
  call: { callId: string; provider: string },
  at: Date,
): Promise<void> {
  await sql`
    insert into dials (call_id, owner, provider, state, created_at, sent_at, answered_at)
    values (${call.callId}, ${owner}, ${call.provider}, 'sent', ${at}, ${at}, ${at})`.execute(trx);
}

/**
 * Marks a call that never reached the network as returned to the queue, inside the transaction
 * that returns it; `owner` (when given) must still hold its waiting record. False when the record
 * is not waiting (it went out meanwhile) or belongs to someone else.
 */
export async function returnDial(trx: Db, callId: string, owner: string | null): Promise<boolean> {
  const found = await sql<{ owner: string; state: DialState }>`
    select owner, state from dials where call_id = ${callId} for update`.execute(trx);
  const record = found.rows[0];
  if (!record) {
    // A call recorded before dial records existed: it is returned under a record saying so.
    await sql`
      insert into dials (call_id, owner, provider, state, created_at)
      values (${callId}, ${owner ?? 'unknown'}, 'unknown', 'returned', now())`.execute(trx);
    return true;
  }
  if (record.state !== 'waiting' || (owner !== null && record.owner !== owner)) return false;
  await sql`update dials set state = 'returned' where call_id = ${callId}`.execute(trx);
  return true;
}

/** The dial records, over the pool or a transaction. */
export class PgDialsRepo implements DialsRepo {
  constructor(private readonly db: Db) {}

  open(owner: string, calls: Array<{ callId: string; provider: string }>, at: Date): Promise<void> {
    return openDials(this.db, owner, calls, at);
  }

  openAnswered(owner: string, call: { callId: string; provider: string }, at: Date): Promise<void> {
    return openAnsweredDial(this.db, owner, call, at);
  }

  returnDial(callId: string, owner: string | null): Promise<boolean> {
    return returnDial(this.db, callId, owner);
  }

  async hold(owner: string, callId: string, provider: string): Promise<boolean> {
    // The no-op update returns the row only when it is this owner's waiting record.
    const held = await sql<{ call_id: string }>`
      insert into dials (call_id, owner, provider, state, created_at)
      values (${callId}, ${owner}, ${provider}, 'waiting', now())
      on conflict (call_id) do update set owner = dials.owner
        where dials.owner = excluded.owner and dials.state = 'waiting'
      returning call_id`.execute(this.db);
    return held.rows.length === 1;
  }

  async send(owner: string, calls: SendingCall[]): Promise<Array<{ callId: string; sentAt: Date }>> {
    const rows = await sql<{ call_id: string; sent_at: Date }>`
      with sent as (
        insert into dials (call_id, owner, provider, state, created_at, sent_at)
        select x.id, ${owner}, x.provider, 'sent', x.at, x.at
        from unnest(${calls.map((c) => c.callId)}::text[], ${calls.map((c) => c.provider)}::text[],
                    ${calls.map((c) => c.at.toISOString())}::timestamptz[]) as x(id, provider, at)
        on conflict (call_id) do update set state = 'sent', sent_at = excluded.sent_at
          where dials.owner = excluded.owner and dials.state = 'waiting'
        returning call_id, sent_at
      ), started as (
        update calls c set created_at = sent.sent_at from sent where c.id = sent.call_id and c.status = 'ONGOING'
      )
      select call_id, sent_at from sent`.execute(this.db);
    return rows.rows.map((row) => ({ callId: row.call_id, sentAt: new Date(row.sent_at) }));
  }

  async refused(owner: string, callId: string): Promise<void> {
    await sql`
      update dials set state = 'waiting', sent_at = null
      where call_id = ${callId} and owner = ${owner} and state = 'sent'`.execute(this.db);
  }

  async answered(owner: string, callId: string, at: Date): Promise<boolean> {
    const marked = await sql<{ call_id: string }>`
      update dials set answered_at = ${at}
      where call_id = ${callId} and owner = ${owner} and answered_at is null
      returning call_id`.execute(this.db);
    return marked.rows.length > 0;
  }

  async ended(owner: string, event: CallEndedEvent): Promise<void> {
    const stored: StoredEnd = {
      ...event,
      answeredAt: event.answeredAt?.toISOString() ?? null,
      endedAt: event.endedAt.toISOString(),
    };
    await sql`
      update dials set state = 'ended', ended_at = ${event.endedAt}, outcome = ${JSON.stringify(stored)}::text::jsonb,
        answered_at = coalesce(answered_at, ${event.answeredAt})
      where call_id = ${event.callId} and owner = ${owner} and state in ('waiting', 'sent')`.execute(this.db);
  }

  async find(callId: string): Promise<DialRecord | null> {
    const rows = await sql<DialRecordRow>`
      select ${DIAL_RECORD_COLUMNS}
      from dials d left join dial_owners o on o.id = d.owner
      where d.call_id = ${callId}`.execute(this.db);
    const row = rows.rows[0];
    return row ? dialRecordFrom(row) : null;
  }

  async adopt(owner: string, callId: string, from: string): Promise<boolean> {
    const taken = await sql<{ call_id: string }>`
      update dials set owner = ${owner} where call_id = ${callId} and owner = ${from}
      returning call_id`.execute(this.db);
    return taken.rows.length === 1;
  }

  async handOff(owner: string, callId: string): Promise<boolean> {
    const given = await sql<{ call_id: string }>`
      update dials set owner = ${HAND_OFF_OWNER}
      where call_id = ${callId} and owner = ${owner} and state = 'waiting'
      returning call_id`.execute(this.db);
    return given.rows.length === 1;
  }

  async pruneSettled(keepDays: number): Promise<void> {
    await sql`
      delete from dials
      where created_at < now() - ${`${keepDays} days`}::interval and state <> 'waiting' and state <> 'sent'`.execute(
      this.db,
    );
  }

  async unsettled(query: UnsettledQuery): Promise<UnsettledCall[]> {
    const { owner, all, unrecordedBefore, lostBefore, stuckBefore, limit } = query;
    return this.callsToSettle(
      sql`
      c.status = 'ONGOING'
      and (
        (d.call_id is null and c.created_at < ${unrecordedBefore})
        or (d.owner <> ${owner} and (${all} or o.id is null or o.lease_until < now()))
        or (d.state in ('sent', 'ended') and (d.owner = ${owner} or d.state = 'ended')
            and coalesce(d.sent_at, d.created_at) < ${lostBefore})
        or (d.owner = ${owner} and d.state = 'waiting' and d.created_at < ${stuckBefore})
      )
      -- Calls of gone owners first: this process's own long calls (checked for a lost end, and
      -- usually still up here) must never fill the page and hold a dead worker's calls back.
      order by (d.owner = ${owner} and d.state = 'sent') nulls first, c.created_at`,
      limit,
    );
  }

  handedOff(limit: number): Promise<UnsettledCall[]> {
    // The partial index on the owner of records not ended finds these without a scan.
    return this.callsToSettle(
      sql`
      d.owner = ${HAND_OFF_OWNER} and d.state = 'waiting' and c.status = 'ONGOING'
      order by d.created_at`,
      limit,
    );
  }

  /** ONGOING calls with their agent, contact and dial record, chosen by `where` (with its order). */
  private async callsToSettle(where: RawBuilder<unknown>, limit: number): Promise<UnsettledCall[]> {
    const rows = (
      await sql<DialRecordRow & Omit<UnsettledCall, 'record'>>`
        select c.id, c.phone_number, c.attempt, c.created_at, c.user_id, c.batch_id, c.batch_seq, c.provider,
               c.variables, a.id as agent_id, a.name as agent_name, a.basic_details, a.sip_trunk_id,
               ct.id as contact_id, ct.name as contact_name, ct.company as contact_company,
               ct.metadata as contact_metadata, ${DIAL_RECORD_COLUMNS}
        from calls c
        join agents a on a.id = c.agent_id
        join contacts ct on ct.id = c.contact_id
        left join dials d on d.call_id = c.id
        left join dial_owners o on o.id = d.owner
        where ${where}
        limit ${limit}`.execute(this.db)
    ).rows;
    return rows.map((row) => ({ ...row, record: dialRecordFrom(row) }));
  }
}
