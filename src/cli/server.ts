import path from 'node:path';
import { openDatabase, type Progress } from '../adapters/postgres/database.js';
import { migrate } from '../adapters/postgres/migrate.js';
import { loadConfig } from '../config.js';
import { createRuntime, type Role } from '../main.js';
import { seedDemo } from '../services/demo.js';

/** Progress lines of a start: on stdout with the rest of what a start prints, warnings on stderr. */
const printProgress: Progress = (line, level) =>
  (level === 'warn' ? process.stderr : process.stdout).write(`${line}\n`);

/** `outdial serve|api|worker`: build the runtime, listen and/or work, and shut down cleanly on a signal. */

export async function runServer(role: Role): Promise<void> {
  const config = loadConfig();
  const runtime = await createRuntime(config, { progress: printProgress });
  const out = (line = '') => process.stdout.write(`${line}\n`);

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
  } finally {
    runtime.app.log.level = level;
  }
  const base = config.publicUrl;
  out('');
  out(
    `outdial ${role === 'serve' ? 'API and workers' : 'API'} listening on ${base} (database: ${runtime.database.kind}, cache: ${config.redisUrl ? 'redis' : 'memory'}, telephony: ${config.voiceProvider})`,
  );
  if (runtime.adminTokenGenerated) {
    out('');
    out(`Admin token (generated now, shown once, kept in ${path.join(config.dataDir, 'admin-token')}):`);
    out(`  ${runtime.adminToken}`);
  }
  if (config.seedDemo) {
    const demo = await seedDemo(runtime.deps, config.demoMinutes, runtime.database.kind);
    if (demo) {
      out('');
      out(`First start: created a demo user with ${config.demoMinutes} minutes, an agent and an API key.`);
      out(`  user:    ${demo.userId}`);
      out(`  agent:   ${demo.agentId}`);
      out(`  API key: ${demo.apiKey}`);
      out(`  (the key is also in ${demo.keyFile})`);
      if (demo.keptFile) {
        out(`  (${demo.keptFile} holds the demo key of another database: left as it was)`);
      }
      out('');
      out('Place a simulated call:');
      out(`  curl -s -X POST ${base}/api/v1/call/dial \\`);
      out(`    -H "Authorization: Bearer ${demo.apiKey}" -H "Content-Type: application/json" \\`);
      out(
        `    -d '{"to":"+14155550123","agentConfigId":"${demo.agentId}","callerDetails":{"name":"Jordan"}}'`,
      );
    }
  }
  out('');
}

export async function runMigrate(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pgdata'),
    onProgress: printProgress,
  });
  try {
    const applied = await migrate(database);
    process.stdout.write(
      applied.length > 0
        ? `Applied migrations ${applied.join(', ')} (${database.kind})\n`
        : `Database is up to date (${database.kind})\n`,
    );
  } finally {
    await database.close();
  }
}
