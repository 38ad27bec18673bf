import { defineConfig } from 'vitest/config';

/**
 * Three projects: unit tests once, and the integration and HTTP suites twice, on PostgreSQL with
 * Redis and on embedded PGlite with the in-memory cache, so both storage paths pass the same tests.
 */
const integration = ['test/http/**/*.test.ts', 'test/integration/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest would use cores - 1 = one worker here; these tests mostly wait on timers, sockets and
    // child processes, so four files at a time finish sooner on this 2-core machine.
    maxWorkers: 4,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: integration,
          // *.pglite.test.ts are about the embedded database itself: PGlite only.
          exclude: ['test/**/*.pglite.test.ts'],
          env: { OUTDIAL_TEST_STORE: 'postgres' },
          globalSetup: ['test/helpers/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pglite',
          include: integration,
          // *.pg.test.ts need several processes on one database: PostgreSQL only.
          exclude: ['test/**/*.pg.test.ts'],
          env: { OUTDIAL_TEST_STORE: 'pglite' },
          globalSetup: ['test/helpers/global-setup.ts'],
        },
      },
    ],
  },
});
