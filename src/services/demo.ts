import fs from 'node:fs';
import path from 'node:path';
import { AgentService } from './agents.js';
import type { Deps } from './deps.js';
import { KeyService } from './keys.js';
import { UserService } from './users.js';

export interface DemoAccount {
  userId: string;
  agentId: string;
  apiKey: string;
  keyFile: string;
  /** The demo key file found in the data dir and left as it was (another database's), or null. */
  keptFile: string | null;
}

const KEY_FILE = 'demo-api-key';
const INFO_FILE = 'demo.json';

/**
 * On the first start with an empty database: a demo user with minutes, an active agent and an API
 * key, so `npm start` is followed by a working curl. Under an advisory lock on PostgreSQL, so two
 * processes starting together seed once. The key is also written to the data dir (mode 0600): the
 * README's walkthrough reads it from there. Files already there are never replaced: a data dir can
 * hold the demo of another database (the embedded one, before DATABASE_URL was set), whose key
 * still works there; this database's demo is then written beside it, named by its user id.
 */
export async function seedDemo(deps: Deps, minutes: number): Promise<DemoAccount | null> {
  return deps.store.exclusive('outdial_seed', async (store) => {
    if (await store.users.hasAny()) return null;
    return create({ ...deps, store }, minutes);
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
  const dir = deps.config.dataDir;
  fs.mkdirSync(dir, { recursive: true });
  // Both files or neither: the walkthrough reads the key from one and the agent from the other.
  const taken = [KEY_FILE, INFO_FILE].some((name) => fs.existsSync(path.join(dir, name)));
  const keyFile = writeNew(dir, taken ? null : KEY_FILE, `${KEY_FILE}-${user.id}`, `${key.key}\n`);
  writeNew(
    dir,
    taken ? null : INFO_FILE,
    `demo-${user.id}.json`,
    `${JSON.stringify({ userId: user.id, agentId: agent.id, keyId: key.id }, null, 2)}\n`,
  );
  return {
    userId: user.id,
    agentId: agent.id,
    apiKey: key.key,
    keyFile,
    keptFile: taken ? path.join(dir, KEY_FILE) : null,
  };
}

/**
 * Writes `content` to `name`, or to `ownName` (the new user's, which cannot exist yet) when `name`
 * is null or appeared meanwhile: the `wx` flag refuses to replace a file. Returns the path written.
 */
function writeNew(dir: string, name: string | null, ownName: string, content: string): string {
  if (name !== null) {
    const file = path.join(dir, name);
    try {
      fs.writeFileSync(file, content, { flag: 'wx', mode: 0o600 });
      return file;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const file = path.join(dir, ownName);
  fs.writeFileSync(file, content, { flag: 'wx', mode: 0o600 });
  return file;
}

/**
 * The demo of an earlier start, for the banner of a later one: from the data dir's files, and only
 * while its key still opens this database (a key of another database, or revoked, is not shown).
 */
export async function existingDemo(
  dataDir: string,
  keys: Pick<KeyService, 'authenticate'>,
): Promise<{ agentId: string; apiKey: string; keyFile: string } | null> {
  const keyFile = path.join(dataDir, KEY_FILE);
  let info: { userId?: unknown; agentId?: unknown };
  let apiKey: string;
  try {
    info = JSON.parse(fs.readFileSync(path.join(dataDir, INFO_FILE), 'utf8')) as typeof info;
    apiKey = fs.readFileSync(keyFile, 'utf8').trim();
  } catch {
    return null;
  }
  if (typeof info.agentId !== 'string' || apiKey === '') return null;
  const auth = await keys.authenticate(apiKey).catch(() => null);
  if (!auth || auth.userId !== info.userId) return null;
  return { agentId: info.agentId, apiKey, keyFile };
}
