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
    // expect.poll waits for what it polls; its 1 s default was a bound a loaded machine can pass
    // before the awaited event comes. 10 s only bounds a failure (docs/reliability.md).
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    // Vitest would use cores - 1 = one worker here; these tests mostly wait on timers, sockets,
    // child processes and calls that take real time (AI calls against sipp), so five files at a
    // time finish sooner on this 2-core machine.
    maxWorkers: 5,
    projects: [
      // Unit tests keep a process each: several hold module-level state on purpose (the one shared
      // Silero session, the espeak-ng voice list) and some replace PATH for a moment.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: integration,
          // Each file still gets its own schema, Redis prefix and data dir (test/helpers/app.ts);
          // what it no longer gets is its own process: a worker imports the service's modules once
          // and runs its files one after another, instead of importing them again for every file
          // (that import was 600 of the suite's 3,500 s of work).
          isolate: false,
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
          isolate: false,
          // *.pg.test.ts need several processes on one database: PostgreSQL only.
          exclude: ['test/**/*.pg.test.ts'],
          env: { OUTDIAL_TEST_STORE: 'pglite' },
          globalSetup: ['test/helpers/global-setup.ts'],
        },
      },
    ],
  },
});
