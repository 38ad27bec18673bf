import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/adapters/postgres/database.js';
import { migrate } from '../../src/adapters/postgres/migrate.js';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/main.js';
import { encryptionKeyId } from '../../src/services/sealing.js';
import {
  ADMIN_TOKEN,
  createTestCache,
  createTestStorage,
  eventually,
  FAST_SIM,
  JWT_SECRET,
  STORE,
  type TestStorage,
} from '../helpers/app.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';

const KEY_1 = 'first-encryption-key-0123456789-abcdefgh';
const KEY_2 = 'second-encryption-key-0123456789-abcdefg';
const KEY_3 = 'third-encryption-key-0123456789-abcdefgh';

/** A trunk password as it was sealed before v2: under a key derived from the JWT secret. */
function legacySeal(plain: string): string {
  const key = createHash('sha256').update(`outdial:sip-trunk-passwords:${JWT_SECRET}`).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Webhook secrets and trunk passwords at rest, on one database that outlives several starts (as an
 * upgrade and a key rotation do): what the rows hold, what the admin API answers, and whether a
 * receiver holding the secret it was given still verifies every delivery.
 */
describe(`sealed secrets on ${STORE}`, () => {
  let storage: TestStorage;
  let database: DatabaseHandle;
  let receiver: Receiver;
  const cleanup: Array<() => Promise<void>> = [];
  const clearSecret = whsec();
  const clearPrevious = whsec();
  const userId = 'usr_legacy0000000000000001';
  const trunkId = 'trk_legacy0000000000000001';

  beforeAll(async () => {
    receiver = await Receiver.start();
    storage = await createTestStorage();
    database = await storage.open();
    await migrate(database);
    // Rows as a version before sealing left them: the webhook secrets in clear, the trunk
    // password sealed under the JWT secret.
    await database.db
      .insertInto('users')
      .values({
        id: userId,
        name: 'Upgraded user',
        email: null,
        available_minutes: 100,
        webhook_secret: clearSecret,
        previous_webhook_secret: clearPrevious,
        webhook_secret_rotated_at: new Date(),
      })
      .execute();
    await database.db
      .insertInto('sip_trunks')
      .values({
        id: trunkId,
        user_id: userId,
        name: 'Carrier',
        host: '127.0.0.1',
        port: 5060,
        transport: 'udp',
        username: 'acme',
        password_encrypted: legacySeal('carrier-password'),
        from_number: '+14155550100',
        max_calls_per_second: null,
        max_concurrent_calls: null,
      })
      .execute();
  });
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
    await storage.dispose();
    await receiver.close();
  });

  const start = async (env: Record<string, string>): Promise<Runtime> => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-seal-'));
    const { cache, dispose } = await createTestCache();
    const config = loadConfig({
      OUTDIAL_DATA_DIR: dataDir,
      OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
      OUTDIAL_JWT_SECRET: JWT_SECRET,
      OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'silent',
      ...FAST_SIM,
      ...env,
    });
    let runtime: Runtime;
    try {
      runtime = await createRuntime(config, { logger: pino({ level: 'silent' }), database, cache });
    } catch (error) {
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
      throw error;
    }
    runtime.startWorkers();
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await runtime.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
    cleanup.push(close);
    Object.assign(runtime, { stop: close });
    return runtime;
  };
  const stop = (runtime: Runtime) => (runtime as Runtime & { stop: () => Promise<void> }).stop();
  const admin = (runtime: Runtime, method: 'GET' | 'POST', url: string, payload?: object) =>
    runtime.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(payload ? { payload } : {}),
    });
  const stored = async (id: string) =>
    database.db
      .selectFrom('users')
      .select(['webhook_secret', 'previous_webhook_secret'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  const storedPassword = async () =>
    (
      await database.db
        .selectFrom('sip_trunks')
        .select('password_encrypted')
        .where('id', '=', trunkId)
        .executeTakeFirstOrThrow()
    ).password_encrypted;

  /** Places a simulated call with a callback and returns the delivery the receiver got. */
  const deliveredCall = async (runtime: Runtime, account: { userId: string }) => {
    const agent = await admin(runtime, 'POST', '/admin/v1/agents', {
      userId: account.userId,
      name: 'Agent',
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en' },
    });
    const key = await admin(runtime, 'POST', '/admin/v1/keys', { userId: account.userId, name: 'k' });
    const hook = `/hook-${randomBytes(4).toString('hex')}`;
    const dial = await runtime.app.inject({
      method: 'POST',
      url: '/api/v1/call/dial',
      headers: { authorization: `Bearer ${key.json<{ key: string }>().key}` },
      payload: {
        to: '+14155550123',
        agentConfigId: agent.json<{ id: string }>().id,
        statusCallBackUrl: receiver.url(hook),
      },
    });
    expect(dial.statusCode, dial.body).toBe(200);
    return eventually(async () => receiver.on(hook)[0], 15_000);
  };

  it('seals the clear secrets of a database from before, and signatures stay the same', async () => {
    const runtime = await start({ OUTDIAL_ENCRYPTION_KEY: KEY_1 });
    const row = await stored(userId);
    for (const value of [row.webhook_secret, row.previous_webhook_secret]) {
      expect(value).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_1)}:`));
      expect(value).not.toContain('whsec_');
    }
    expect(row.webhook_secret).not.toContain(clearSecret.slice(6, 30));
    expect(await storedPassword()).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_1)}:`));
    expect((await runtime.services.sipTrunks.forDialing(trunkId))?.password).toBe('carrier-password');

    // The admin API answers the secrets the receiver already holds, never the sealed text.
    const shown = await admin(runtime, 'GET', `/admin/v1/users/${userId}/webhook-secret`);
    expect(shown.json()).toMatchObject({ secret: clearSecret, previousSecret: clearPrevious });
    expect(shown.body).not.toContain('v2:');

    const delivery = await deliveredCall(runtime, { userId });
    expect(verifySignatures(delivery, clearSecret)).toEqual({ hex: true, standard: true });
    // During a rotation only the Standard Webhooks header carries the previous secret's signature;
    // x-outdial-signature is one hex value, the current secret's (docs/webhooks.md).
    expect(verifySignatures(delivery, clearPrevious)).toEqual({ hex: false, standard: true });
    await stop(runtime);
  });

  it('moves every secret to a new key while the old one is listed as previous, and refuses a host without it', async () => {
    const rotated = await start({ OUTDIAL_ENCRYPTION_KEY: KEY_2, OUTDIAL_PREVIOUS_ENCRYPTION_KEYS: KEY_1 });
    const row = await stored(userId);
    expect(row.webhook_secret).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_2)}:`));
    expect(row.previous_webhook_secret).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_2)}:`));
    expect(await storedPassword()).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_2)}:`));
    const delivery = await deliveredCall(rotated, { userId });
    expect(verifySignatures(delivery, clearSecret)).toEqual({ hex: true, standard: true });
    await stop(rotated);

    // The old key is no longer needed once the start re-sealed everything.
    const newOnly = await start({ OUTDIAL_ENCRYPTION_KEY: KEY_2 });
    expect((await admin(newOnly, 'GET', `/admin/v1/users/${userId}/webhook-secret`)).json()).toMatchObject({
      secret: clearSecret,
    });
    await stop(newOnly);

    // A host with another key would sign nothing and seal what the others cannot open: it stops.
    await expect(start({ OUTDIAL_ENCRYPTION_KEY: KEY_3 })).rejects.toThrow(/OUTDIAL_ENCRYPTION_KEY/);
    expect((await stored(userId)).webhook_secret).toMatch(new RegExp(`^v2:${encryptionKeyId(KEY_2)}:`));
  });

  it('stores new and rotated secrets and new trunk passwords sealed, and signs with the clear secret', async () => {
    const runtime = await start({ OUTDIAL_ENCRYPTION_KEY: KEY_2 });
    const user = (await admin(runtime, 'POST', '/admin/v1/users', { name: 'New', minutes: 10 })).json<{
      id: string;
    }>();
    const first = (await admin(runtime, 'GET', `/admin/v1/users/${user.id}/webhook-secret`)).json<{
      secret: string;
    }>().secret;
    expect(first).toMatch(/^whsec_/);
    const rotated = (
      await admin(runtime, 'POST', `/admin/v1/users/${user.id}/webhook-secret/rotate`, {})
    ).json<{ secret: string; previousSecret: string }>();
    expect(rotated.previousSecret).toBe(first);
    const row = await stored(user.id);
    for (const clear of [first, rotated.secret]) {
      expect(row.webhook_secret).not.toContain(clear.slice(6));
      expect(row.previous_webhook_secret).not.toContain(clear.slice(6));
    }
    expect(row.webhook_secret).toMatch(/^v2:/);

    const trunk = await admin(runtime, 'POST', '/admin/v1/sip-trunks', {
      userId: user.id,
      name: 'T',
      host: 'sip.example.com',
      password: 'p4ssw0rd-in-clear',
      fromNumber: '+14155550100',
    });
    expect(trunk.statusCode, trunk.body).toBe(201);
    expect(trunk.body).not.toContain('v2:');

    const delivery = await deliveredCall(runtime, { userId: user.id });
    expect(verifySignatures(delivery, rotated.secret)).toEqual({ hex: true, standard: true });
    expect(verifySignatures(delivery, first)).toEqual({ hex: false, standard: true });
    await stop(runtime);
  });
});
