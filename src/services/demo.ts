import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import { AgentService } from './agents.js';
import type { Deps } from './deps.js';
import { KeyService } from './keys.js';
import { UserService } from './users.js';

export interface DemoAccount {
  userId: string;
  agentId: string;
  apiKey: string;
  keyFile: string;
}

/**
 * On the first start with an empty database: a demo user with minutes, an active agent and an API
 * key, so `npm start` is followed by a working curl. Under an advisory lock on PostgreSQL, so two
 * processes starting together seed once. The key is also written to the data dir (mode 0600): the
 * README's walkthrough reads it from there.
 */
export async function seedDemo(
  deps: Deps,
  minutes: number,
  kind: 'postgres' | 'pglite',
): Promise<DemoAccount | null> {
  return deps.db.connection().execute(async (conn) => {
    const pg = kind === 'postgres';
    if (pg) await sql`select pg_advisory_lock(hashtext(current_schema() || '.outdial_seed'))`.execute(conn);
    try {
      const existing = await conn.selectFrom('users').select('id').limit(1).executeTakeFirst();
      if (existing) return null;
      return await create({ ...deps, db: conn as Db }, minutes);
    } finally {
      if (pg)
        await sql`select pg_advisory_unlock(hashtext(current_schema() || '.outdial_seed'))`.execute(conn);
    }
  });
}

async function create(deps: Deps, minutes: number): Promise<DemoAccount> {
  const user = await new UserService(deps).create({ name: 'Demo user', email: 'demo@example.com', minutes });
  const agent = await new AgentService(deps).create(user.id, {
    name: 'Demo agent',
    basicDetails: { agent_name: 'Ava', agentLanguage: 'en', voiceGender: 'female', voiceSpeed: 1 },
    metricConfig: { enabled: true, customMetrics: [] },
  });
  const key = await new KeyService(deps).create(user.id, { name: 'Demo key' });
  const keyFile = path.join(deps.config.dataDir, 'demo-api-key');
  fs.mkdirSync(deps.config.dataDir, { recursive: true });
  fs.writeFileSync(keyFile, `${key.key}\n`, { mode: 0o600 });
  fs.writeFileSync(
    path.join(deps.config.dataDir, 'demo.json'),
    `${JSON.stringify({ userId: user.id, agentId: agent.id, keyId: key.id }, null, 2)}\n`,
    { mode: 0o600 },
  );
  return { userId: user.id, agentId: agent.id, apiKey: key.key, keyFile };
}
