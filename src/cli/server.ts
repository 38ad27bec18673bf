import type { Progress } from '../adapters/postgres/database.js';
import { migrate } from '../adapters/postgres/migrate.js';
import { type Config, loadConfig } from '../config.js';
import { flushStdoutLog } from '../logging.js';
import { createRuntime, openConfiguredDatabase, type Role, VERSION } from '../main.js';
import { existingDemo, seedDemo } from '../services/demo.js';
import { listeningLine, plainStartLines, type StartReport, startBanner } from './banner.js';
import { explainStartFailure, StartFailure } from './start-failure.js';

/** Progress lines of a start: on stdout with the rest of what a start prints, warnings on stderr. */
const printProgress: Progress = (line, level) => {
  flushStdoutLog();
  (level === 'warn' ? process.stderr : process.stdout).write(`${line}\n`);
};

/** `outdial serve|api|worker`: build the runtime, listen and/or work, and shut down cleanly on a signal. */

export async function runServer(role: Role): Promise<void> {
  const config = loadConfig();
  const runtime = await explained(config, () => createRuntime(config, { role, progress: printProgress }));
  const out = (line = '') => {
    flushStdoutLog();
    process.stdout.write(`${line}\n`);
  };

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    runtime.deps.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  if (role !== 'api') runtime.startWorkers();
  if (role === 'worker') {
    out(`outdial worker running (database: ${runtime.database.kind})`);
    return;
  }

  // Fastify names each address it listens on at info; in the pretty format the start's own lines
  // below say where it listens, once.
  const level = runtime.app.log.level;
  if (config.logFormat === 'pretty') runtime.app.log.level = 'warn';
  try {
    await runtime.app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await runtime.close().catch(() => {});
    throw explain(error, config);
  } finally {
    runtime.app.log.level = level;
  }
  const terminal = process.stdout.isTTY === true;
  const started = { role, config, database: runtime.database.kind, cache: runtime.cacheKind };
  if (!terminal) {
    out('');
    out(listeningLine(started));
  }
  const demo = config.seedDemo ? await seedDemo(runtime.deps, config.demoMinutes) : null;
  // In a terminal, a later start shows the demo's key and call again while the key works.
  const earlier =
    !demo && config.seedDemo && terminal ? await existingDemo(config.dataDir, runtime.services.keys) : null;
  const report: StartReport = {
    ...started,
    version: VERSION,
    adminToken: runtime.adminTokenGenerated ? runtime.adminToken : null,
    demo: demo
      ? {
          agentId: demo.agentId,
          apiKey: demo.apiKey,
          keyFile: demo.keyFile,
          created: { userId: demo.userId, minutes: config.demoMinutes, keptFile: demo.keptFile },
        }
      : earlier
        ? { ...earlier, created: null }
        : null,
  };
  for (const line of terminal ? startBanner(report) : plainStartLines(report)) out(line);
}

export async function runMigrate(): Promise<void> {
  const config = loadConfig();
  const database = await explained(config, () => openConfiguredDatabase(config, printProgress));
  try {
    const applied = await explained(config, () => migrate(database));
    process.stdout.write(
      applied.length > 0
        ? `Applied migrations ${applied.join(', ')} (${database.kind})\n`
        : `Database is up to date (${database.kind})\n`,
    );
  } finally {
    await database.close();
  }
}

/**
 * A failure whose cause is outside the code (a port, the data dir, a server, another process)
 * becomes a StartFailure: one line with the fix, printed by the CLI without a stack. Anything else
 * is a bug: the CLI prints it in one line too, with its stack at LOG_LEVEL=debug (cli/index.ts).
 */
function explain(error: unknown, config: Config): unknown {
  const line = explainStartFailure(error, config);
  return line ? new StartFailure(line, { cause: error }) : error;
}

async function explained<T>(config: Config, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw explain(error, config);
  }
}
