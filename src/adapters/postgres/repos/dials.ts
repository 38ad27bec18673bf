import { sql } from 'kysely';
import type { DialsRepo, UnsettledCall, UnsettledQuery } from '../../../store/dials.js';
import type { Db } from '../database.js';
import {
  DIAL_RECORD_COLUMNS,
  type DialRecordRow,
  dialRecordFrom,
  openAnsweredDial,
  openDials,
  returnDial,
} from '../dial-records.js';

/** The dial records' writes a call's lifecycle makes in its transactions (`dial-records.ts` holds their SQL). */
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

  async unsettled(query: UnsettledQuery): Promise<UnsettledCall[]> {
    const { owner, all, unrecordedBefore, lostBefore, stuckBefore, limit } = query;
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
        where c.status = 'ONGOING'
          and (
            (d.call_id is null and c.created_at < ${unrecordedBefore})
            or (d.owner <> ${owner} and (${all} or o.id is null or o.lease_until < now()))
            or (d.state in ('sent', 'ended') and (d.owner = ${owner} or d.state = 'ended')
                and coalesce(d.sent_at, d.created_at) < ${lostBefore})
            or (d.owner = ${owner} and d.state = 'waiting' and d.created_at < ${stuckBefore})
          )
        -- Calls of gone owners first: this process's own long calls (checked for a lost end, and
        -- usually still up here) must never fill the page and hold a dead worker's calls back.
        order by (d.owner = ${owner} and d.state = 'sent') nulls first, c.created_at
        limit ${limit}`.execute(this.db)
    ).rows;
    return rows.map((row) => ({ ...row, record: dialRecordFrom(row) }));
  }
}
