import type { Repos, Store } from '../../store/index.js';
import type { Db } from './database.js';
import { PgAgentsRepo } from './repos/agents.js';
import { PgAnalysisRepo } from './repos/analysis.js';
import { PgBatchContactsRepo } from './repos/batch-contacts.js';
import { PgBatchPayloadsRepo } from './repos/batch-payloads.js';
import { PgBatchesRepo } from './repos/batches.js';
import { PgBreakersRepo } from './repos/breakers.js';
import { PgCallViewsRepo } from './repos/call-views.js';
import { PgCallsRepo } from './repos/calls.js';
import { PgContactsRepo } from './repos/contacts.js';
import { PgDialOwnersRepo } from './repos/dial-owners.js';
import { PgDialsRepo } from './repos/dials.js';
import { PgIdempotencyKeysRepo } from './repos/idempotency-keys.js';
import { PgKeysRepo } from './repos/keys.js';
import { LockOrder, PgLocksRepo, releaseAdvisoryLock, takeAdvisoryLock } from './repos/locks.js';
import { PgSealedColumnsRepo } from './repos/sealed-columns.js';
import { PgSessionsRepo } from './repos/sessions.js';
import { PgSipTrunksRepo } from './repos/sip-trunks.js';
import { PgSuppressionsRepo } from './repos/suppressions.js';
import { PgUsersRepo } from './repos/users.js';
import { PgWebhookDeliveriesRepo } from './repos/webhook-deliveries.js';

/** The executor each repository set runs on (the pool's Db, one connection, or a transaction). */
const executors = new WeakMap<Repos, Db>();

/**
 * What `afterCommit` does with its work: keep it until the transaction commits, run it at once
 * (outside a transaction there is nothing to wait for), or refuse it (a transaction whose commit
 * its caller holds, `transactionRepos`, runs none).
 */
type AfterCommit = Array<() => Promise<void>> | 'now' | 'refused';

/** The repositories over `db`. */
function buildRepos(db: Db, order: LockOrder | null, committed: AfterCommit): Repos {
  const repos: Repos = {
    users: new PgUsersRepo(db, order),
    keys: new PgKeysRepo(db),
    sessions: new PgSessionsRepo(db),
    agents: new PgAgentsRepo(db),
    sipTrunks: new PgSipTrunksRepo(db),
    sealedColumns: new PgSealedColumnsRepo(db),
    webhookDeliveries: new PgWebhookDeliveriesRepo(db),
    batches: new PgBatchesRepo(db, order),
    batchPayloads: new PgBatchPayloadsRepo(db),
    contacts: new PgContactsRepo(db),
    calls: new PgCallsRepo(db),
    analysis: new PgAnalysisRepo(db),
    callViews: new PgCallViewsRepo(db),
    batchContacts: new PgBatchContactsRepo(db, order),
    idempotencyKeys: new PgIdempotencyKeysRepo(db),
    suppressions: new PgSuppressionsRepo(db),
    dials: new PgDialsRepo(db),
    dialOwners: new PgDialOwnersRepo(db),
    breakers: new PgBreakersRepo(db),
    locks: new PgLocksRepo(db, order),
    afterCommit: (run) => {
      if (committed === 'refused')
        throw new Error('afterCommit: this transaction is committed by its caller');
      if (committed === 'now') void run();
      else committed.push(run);
    },
  };
  executors.set(repos, db);
  return repos;
}

/**
 * The Store over PostgreSQL or PGlite: one Kysely `Db` (either driver behind one dialect). `kind`
 * says whether other processes can share the database (advisory locks are only needed then).
 */
export function pgStore(db: Db, kind: 'postgres' | 'pglite'): Store {
  const store: Store = {
    ...buildRepos(db, null, 'now'),
    tx: async (fn) => {
      const committed: Array<() => Promise<void>> = [];
      const result = await db.transaction().execute((trx) => fn(buildRepos(trx, new LockOrder(), committed)));
      for (const run of committed) await run();
      return result;
    },
    exclusive: (name, fn) =>
      db.connection().execute(async (conn) => {
        const shared = kind === 'postgres';
        if (shared) await takeAdvisoryLock(conn, name);
        try {
          return await fn(pgStore(conn, kind));
        } finally {
          if (shared) await releaseAdvisoryLock(conn, name);
        }
      }),
  };
  executors.set(store, db);
  return store;
}

/** The repositories over a transaction the caller holds (`trx`), with a lock order of their own. */
export function transactionRepos(trx: Db): Repos {
  return buildRepos(trx, new LockOrder(), 'refused');
}
