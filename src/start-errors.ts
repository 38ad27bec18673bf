/**
 * What stops a start for a reason outside the code: each carries what the one line on stderr
 * names (src/cli/start-failure.ts). Kept apart from the adapters so the CLI reads them without
 * loading a database driver.
 */

/** The embedded database's files are held by another live process (its pid is in the lock file). */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`The embedded database in ${dir} is in use by process ${pid}`);
  }
}

/** The database (DATABASE_URL) or Redis (REDIS_URL) did not answer the start's first request. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  constructor(
    readonly dependency: 'database' | 'redis',
    readonly url: string,
    override readonly cause: unknown,
  ) {
    super(`${dependency === 'database' ? 'PostgreSQL' : 'Redis'} did not answer: ${reason(cause)}`);
  }
}

function reason(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
