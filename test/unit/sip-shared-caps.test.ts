import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisLeases } from '../../src/adapters/redis/leases.js';
import { RedisRateLimiter } from '../../src/adapters/redis/rate-limiter.js';
import { OfflineConversationEngine } from '../../src/adapters/voice/conversation.js';
import { SipVoiceProvider } from '../../src/adapters/voice/sip/provider.js';
import type { CallEndedEvent, DialRequest } from '../../src/ports.js';
import { carrierLoad, startSipp } from '../helpers/sipp.js';

const REDIS_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

/**
 * Two processes' SIP providers (two workers) sharing one Redis and one trunk: the trunk's caps
 * hold across both, as the carrier (sipp) sees them.
 */
describe('trunk caps shared by several workers through Redis', () => {
  const prefix = `test-sip-shared-${process.pid}-${Date.now()}:`;
  const redis = new Redis(REDIS_URL, { keyPrefix: prefix });
  const dirs: string[] = [];
  afterAll(async () => {
    const plain = new Redis(REDIS_URL);
    const keys = await plain.keys(`${prefix}*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
    await redis.quit();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  function worker(trunkPort: number) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-shared-'));
    dirs.push(dataDir);
    const ended: CallEndedEvent[] = [];
    const sip = new SipVoiceProvider({
      publicAddress: '127.0.0.1',
      bindAddress: '127.0.0.1',
      sipPort: 0,
      rtpPorts: [44200, 44399],
      dataDir,
      ringTimeoutMs: 5000,
      maxCallMs: 20_000,
      amd: true,
      engine: new OfflineConversationEngine(),
      trunk: async (id) => ({
        id,
        host: '127.0.0.1',
        port: trunkPort,
        username: null,
        password: null,
        fromNumber: '+14155550100',
        maxCallsPerSecond: 4,
        maxConcurrentCalls: 2,
      }),
      shared: { leases: new RedisLeases(redis), limiter: new RedisRateLimiter(redis) },
    });
    sip.onCallEnded(async (event) => {
      ended.push(event);
    });
    return { sip, ended };
  }

  const request = (callId: string): DialRequest => ({
    callId,
    to: '+14155550123',
    attempt: 1,
    agent: {
      id: 'agt_1',
      name: 'Agent',
      agentName: null,
      language: null,
      sipTrunkId: 'trk_shared',
      details: {},
    },
    contact: { id: 'cnt_1', name: 'Jordan' },
  });

  it('never has more calls up, or more INVITEs a second, than the trunk allows in all', async () => {
    const log = path.join(os.tmpdir(), `sipp-shared-${process.pid}-${Date.now()}.log`);
    const far = await startSipp('batch', { calls: 8, messageLog: log, timeoutSeconds: 60 });
    const a = worker(far.port);
    const b = worker(far.port);
    for (let i = 0; i < 4; i++) {
      await a.sip.dial(request(`call_a${i}`));
      await b.sip.dial(request(`call_b${i}`));
    }
    await expect.poll(() => a.ended.length + b.ended.length, { timeout: 30_000, interval: 200 }).toBe(8);
    expect([...a.ended, ...b.ended].every((event) => event.status === 'COMPLETED')).toBe(true);
    expect(await far.done).toBe(0);
    const load = carrierLoad(log);
    fs.rmSync(log, { force: true });
    expect(load.calls).toBe(8);
    // Each worker alone would allow 2 up and 4 a second: together they still do.
    expect(load.peak).toBeLessThanOrEqual(2);
    expect(load.peak).toBe(2);
    expect(load.invitesPerSecond).toBeLessThanOrEqual(4);
    await Promise.all([a.sip.close(), b.sip.close()]);
  }, 60_000);
});
