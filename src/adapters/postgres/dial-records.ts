import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { CallEndedEvent, DialRecord, DialRecords } from '../../ports.js';
import type { DialOwnersRepo } from '../../store/dial-owners.js';
import type { DialsRepo } from '../../store/dials.js';
import type { CallProgress, CallProgressSink, Repos } from '../../store/index.js';
import type { Db } from './database.js';
import { PgDialOwnersRepo } from './repos/dial-owners.js';
import { PgDialsRepo } from './repos/dials.js';
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
  private readonly dials: DialsRepo;
  private readonly owners: DialOwnersRepo;

  constructor(
    private readonly db: Db,
    private readonly logger?: Logger,
    private readonly options: { progress?: CallProgressSink } = {},
  ) {
    this.owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.dials = new PgDialsRepo(db);
    this.owners = new PgDialOwnersRepo(db);
  }

  /** Takes this process's lease and keeps renewing it until close. */
  async start(): Promise<void> {
    await this.owners.take({ id: this.owner, host: os.hostname(), pid: process.pid }, OWNER_LEASE_MS);
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
    await this.owners.release(this.owner);
  }

  async renew(): Promise<void> {
    await this.owners.renew(this.owner, OWNER_LEASE_MS);
  }

  hold(callId: string, provider: string): Promise<boolean> {
    return this.dials.hold(this.owner, callId, provider);
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
    const write = async (dials: DialsRepo, repos: Repos | null) => {
      const sent = await dials.send(this.owner, entries);
      if (repos)
        await progress?.(
          repos,
          sent.map((call) => ({ kind: 'started', callId: call.callId, at: call.sentAt })),
        );
      return sent;
    };
    const sent = progress
      ? await this.db.transaction().execute((trx) => {
          const repos = transactionRepos(trx);
          return write(repos.dials, repos);
        })
      : await write(this.dials, null);
    return new Set(sent.map((call) => call.callId));
  }

  async refused(callId: string): Promise<void> {
    await this.dials.refused(this.owner, callId);
  }

  /**
   * The first answer of a call is kept (a repeated report changes nothing and tells no one again).
   * Without listeners for the call's progress, the one statement alone.
   */
  async answered(callId: string, at: Date, progressEvents = true): Promise<void> {
    const progress = progressEvents ? this.options.progress : undefined;
    if (!progress) {
      await this.dials.answered(this.owner, callId, at);
      return;
    }
    await this.db.transaction().execute(async (trx) => {
      const repos = transactionRepos(trx);
      if (await repos.dials.answered(this.owner, callId, at))
        await progress(repos, [{ kind: 'answered', callId, at }]);
    });
  }

  ended(event: CallEndedEvent): Promise<void> {
    return this.dials.ended(this.owner, event);
  }

  find(callId: string): Promise<DialRecord | null> {
    return this.dials.find(callId);
  }

  adopt(callId: string, from: string): Promise<boolean> {
    return this.dials.adopt(this.owner, callId, from);
  }

  private async prune(): Promise<void> {
    try {
      await this.dials.pruneSettled(KEEP_DAYS);
      await this.owners.pruneGone(KEEP_DAYS);
    } catch (error) {
      this.logger?.warn({ err: error }, 'could not prune old dial records');
    }
  }
}
