import type { Repos, Store } from '../../store/index.js';
import type { Db } from './database.js';
import { PgKeysRepo } from './repos/keys.js';
import { LockOrder, PgLocksRepo } from './repos/locks.js';
import { PgSessionsRepo } from './repos/sessions.js';
import { PgUsersRepo } from './repos/users.js';

/** The executor each repository set runs on (the pool's Db, or a transaction). */
const executors = new WeakMap<Repos, Db>();

function buildRepos(db: Db, order: LockOrder | null): Repos {
  const repos: Repos = {
    users: new PgUsersRepo(db),
    keys: new PgKeysRepo(db),
    sessions: new PgSessionsRepo(db),
    locks: new PgLocksRepo(db, order),
  };
  executors.set(repos, db);
  return repos;
}

/** The Store over PostgreSQL or PGlite: one Kysely `Db` (either driver behind one dialect). */
export function pgStore(db: Db): Store {
  const store: Store = {
    ...buildRepos(db, null),
    tx: (fn) => db.transaction().execute((trx) => fn(buildRepos(trx, new LockOrder()))),
  };
  executors.set(store, db);
  return store;
}

/**
 * Transitional, for code not yet behind the Store (issue 23): the Kysely executor a repository set
 * runs on, so a converted service can hand its transaction to a function that still takes a `Db`.
 * Only the composition and adapters/postgres may call it; it goes when the last caller is converted.
 */
export function unsafeExecutor(repos: Repos): Db {
  const db = executors.get(repos);
  if (!db) throw new Error('These repositories are not the PostgreSQL store');
  return db;
}
