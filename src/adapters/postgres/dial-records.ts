import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { type CallEndedEvent, type DialRecord, type DialRecords, HAND_OFF_OWNER } from '../../ports.js';
import type { CallProgress, CallProgressSink } from '../../store/index.js';
import type { Db } from './database.js';
import { DIAL_RECORD_COLUMNS, type DialRecordRow, dialRecordFrom, type StoredEnd } from './repos/dials.js';
import { transactionRepos } from './store.js';

/**
 * A process's lease runs this long and is renewed every third of it: a worker that dies is seen
 * dead 10-15 s later, and a database hiccup of a few seconds never makes a live one look dead.
 */
export const OWNER_LEASE_MS = 15_000;
const RENEW_EVERY_MS = 5_000;
/** Records and dead owners are kept a week (no call lasts that long), looked over hourly. */
const KEEP_DAYS = 7;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** Most sends written in one statement. */
const SENDS_PER_GROUP = 500;

export type { CallProgress, CallProgressSink };

/**
 * Dial records on the kysely database (PostgreSQL or PGlite), and this process's lease. Sends, the
 * per-call write of every dial (a campaign sends up to ~1000 a second), are grouped: those asked
 * for in one turn of the event loop go in one statement.
 */
export class DbDialRecords implements DialRecords {
  readonly owner: string;
  private readonly sends: Array<{
    callId: string;
    provider: string;
    at: Date;
    progressEvents: boolean;
    resolve: (sent: boolean) => void;
    reject: (error: unknown) => void;
  }> = [];
  private flushing = false;
  private renewer: NodeJS.Timeout | null = null;
  private pruner: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly logger?: Logger,
    private readonly options: { progress?: CallProgressSink } = {},
  ) {
    this.owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  }

  /** Takes this process's lease and keeps renewing it until close. */
  async start(): Promise<void> {
    await sql`
      insert into dial_owners (id, host, pid, started_at, renewed_at, lease_until)
      values (${this.owner}, ${os.hostname()}, ${process.pid}, now(), now(), now() + ${`${OWNER_LEASE_MS} milliseconds`}::interval)
      on conflict (id) do nothing`.execute(this.db);
    this.renewer = setInterval(() => {
      this.renew().catch((error: unknown) =>
        this.logger?.warn(
          { err: error },
          'could not renew this process lease; calls it owns may be taken over',
        ),
      );
    }, RENEW_EVERY_MS);
    this.renewer.unref();
    void this.prune();
    this.pruner = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.pruner.unref();
  }

  /**
   * Gives the lease back (it ends now, its last heartbeat now): whatever this process leaves
   * behind (a call that would not hang up, a call that never went out) is settled by another
   * process at once instead of after the lease.
   */
  async close(): Promise<void> {
    if (this.renewer) clearInterval(this.renewer);
    if (this.pruner) clearInterval(this.pruner);
    this.renewer = null;
    this.pruner = null;
    await sql`update dial_owners set renewed_at = now(), lease_until = now() where id = ${this.owner}`.execute(
      this.db,
    );
  }

  async renew(): Promise<void> {
    await sql`
      update dial_owners set renewed_at = now(), lease_until = now() + ${`${OWNER_LEASE_MS} milliseconds`}::interval
      where id = ${this.owner}`.execute(this.db);
  }

  async hold(callId: string, provider: string): Promise<boolean> {
    // The no-op update returns the row only when it is this process's waiting record.
    const held = await sql<{ call_id: string }>`
      insert into dials (call_id, owner, provider, state, created_at)
      values (${callId}, ${this.owner}, ${provider}, 'waiting', now())
      on conflict (call_id) do update set owner = dials.owner
        where dials.owner = excluded.owner and dials.state = 'waiting'
      returning call_id`.execute(this.db);
    return held.rows.length === 1;
  }

  send(callId: string, provider: string, at: Date, progressEvents = true): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.sends.push({ callId, provider, at, progressEvents, resolve, reject });
      if (!this.flushing) void this.flushSends();
    });
  }

  private async flushSends(): Promise<void> {
    this.flushing = true;
    try {
      while (this.sends.length > 0) {
        // One turn of the event loop lets the sends asked for at the same moment join the group.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const group = this.sends.splice(0, SENDS_PER_GROUP);
        try {
          const sent = await this.sendGroup(group);
          for (const entry of group) entry.resolve(sent.has(entry.callId));
        } catch (error) {
          for (const entry of group) entry.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * One statement: each record this process holds waiting (or a call with none yet) becomes sent,
   * and its call's recorded start time becomes the moment it went out; in the same transaction the
   * subscriber hears of the calls that started. A group none of whose calls has listeners for its
   * progress (most campaigns) is the statement alone, without a transaction around it.
   */
  private async sendGroup(
    group: Array<{ callId: string; provider: string; at: Date; progressEvents: boolean }>,
  ): Promise<Set<string>> {
    const unique = new Map(group.map((entry) => [entry.callId, entry]));
    const entries = [...unique.values()];
    const progress = entries.some((entry) => entry.progressEvents) ? this.options.progress : undefined;
    const write = async (trx: Db) => {
      const rows = await sql<{ call_id: string; sent_at: Date }>`
      with sent as (
        insert into dials (call_id, owner, provider, state, created_at, sent_at)
        select x.id, ${this.owner}, x.provider, 'sent', x.at, x.at
        from unnest(${entries.map((e) => e.callId)}::text[], ${entries.map((e) => e.provider)}::text[],
                    ${entries.map((e) => e.at.toISOString())}::timestamptz[]) as x(id, provider, at)
        on conflict (call_id) do update set state = 'sent', sent_at = excluded.sent_at
          where dials.owner = excluded.owner and dials.state = 'waiting'
        returning call_id, sent_at
      ), started as (
        update calls c set created_at = sent.sent_at from sent where c.id = sent.call_id and c.status = 'ONGOING'
      )
      select call_id, sent_at from sent`.execute(trx);
      await progress?.(
        transactionRepos(trx),
        rows.rows.map((row) => ({ kind: 'started', callId: row.call_id, at: new Date(row.sent_at) })),
      );
      return rows.rows;
    };
    const sent = progress ? await this.db.transaction().execute(write) : await write(this.db);
    return new Set(sent.map((row) => row.call_id));
  }

  async refused(callId: string): Promise<void> {
    await sql`
      update dials set state = 'waiting', sent_at = null
      where call_id = ${callId} and owner = ${this.owner} and state = 'sent'`.execute(this.db);
  }

  /**
   * The first answer of a call is kept (a repeated report changes nothing and tells no one again).
   * Without listeners for the call's progress, the one statement alone.
   */
  async answered(callId: string, at: Date, progressEvents = true): Promise<void> {
    const progress = progressEvents ? this.options.progress : undefined;
    const mark = async (trx: Db) => {
      const marked = await sql<{ call_id: string }>`
        update dials set answered_at = ${at}
        where call_id = ${callId} and owner = ${this.owner} and answered_at is null
        returning call_id`.execute(trx);
      if (marked.rows.length > 0) await progress?.(transactionRepos(trx), [{ kind: 'answered', callId, at }]);
    };
    await (progress ? this.db.transaction().execute(mark) : mark(this.db));
  }

  async ended(event: CallEndedEvent): Promise<void> {
    const stored: StoredEnd = {
      ...event,
      answeredAt: event.answeredAt?.toISOString() ?? null,
      endedAt: event.endedAt.toISOString(),
    };
    await sql`
      update dials set state = 'ended', ended_at = ${event.endedAt}, outcome = ${JSON.stringify(stored)}::text::jsonb,
        answered_at = coalesce(answered_at, ${event.answeredAt})
      where call_id = ${event.callId} and owner = ${this.owner} and state in ('waiting', 'sent')`.execute(
      this.db,
    );
  }

  async find(callId: string): Promise<DialRecord | null> {
    const rows = await sql<DialRecordRow>`
      select ${DIAL_RECORD_COLUMNS}
      from dials d left join dial_owners o on o.id = d.owner
      where d.call_id = ${callId}`.execute(this.db);
    const row = rows.rows[0];
    return row ? dialRecordFrom(row) : null;
  }

  async adopt(callId: string, from: string): Promise<boolean> {
    const taken = await sql<{ call_id: string }>`
      update dials set owner = ${this.owner} where call_id = ${callId} and owner = ${from}
      returning call_id`.execute(this.db);
    return taken.rows.length === 1;
  }

  async handOff(callId: string): Promise<boolean> {
    const given = await sql<{ call_id: string }>`
      update dials set owner = ${HAND_OFF_OWNER}
      where call_id = ${callId} and owner = ${this.owner} and state = 'waiting'
      returning call_id`.execute(this.db);
    return given.rows.length === 1;
  }

  private async prune(): Promise<void> {
    const keep = `${KEEP_DAYS} days`;
    try {
      await sql`delete from dials where created_at < now() - ${keep}::interval and state <> 'waiting' and state <> 'sent'`.execute(
        this.db,
      );
      await sql`delete from dial_owners where lease_until < now() - ${keep}::interval`.execute(this.db);
    } catch (error) {
      this.logger?.warn({ err: error }, 'could not prune old dial records');
    }
  }
}
