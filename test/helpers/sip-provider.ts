import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryRateLimiter } from '../../src/adapters/memory/rate-limiter.js';
import { buildVoiceModels } from '../../src/adapters/models/index.js';
import type { Db } from '../../src/adapters/postgres/database.js';
import { migrate } from '../../src/adapters/postgres/migrate.js';
import { LocalDiskRecordings } from '../../src/adapters/recordings/local-disk.js';
import {
  type SipProviderOptions,
  type SipTrunk,
  SipVoiceProvider,
} from '../../src/adapters/voice/sip/provider.js';
import type { CallEndedEvent, DialRecords, DialRequest } from '../../src/ports.js';
import type { DialSteps } from '../../src/services/calls/lifecycle.js';
import { ScriptedConversationEngine } from '../../src/voice/engines/scripted.js';
import { createTestStorage, dialStepsOn } from './app.js';

/** Dial records on a PostgreSQL schema of their own, with this process's lease taken. */
export async function testDialRecords(): Promise<{
  records: DialSteps;
  db: Db;
  /** Another process's records on the same database. */
  another(): Promise<DialSteps>;
  dispose(): Promise<void>;
}> {
  const storage = await createTestStorage('postgres');
  const handle = await storage.open();
  await migrate(handle);
  const records = dialStepsOn(handle.db);
  await records.start();
  const others: DialSteps[] = [];
  return {
    records,
    db: handle.db,
    async another() {
      const other = dialStepsOn(handle.db);
      await other.start();
      others.push(other);
      return other;
    },
    async dispose() {
      for (const other of others) await other.close().catch(() => {});
      await records.close().catch(() => {});
      await storage.dispose();
    },
  };
}

export interface TestSipProvider {
  sip: SipVoiceProvider;
  /** Every call end the provider reported, in order. */
  ended: CallEndedEvent[];
  dataDir: string;
  /** Closes the provider and removes its data dir. */
  dispose(): Promise<void>;
}

/**
 * A SIP provider on loopback with a fresh data dir and the given dial records. `trunk` is the
 * trunk every call goes through (null: no such trunk); `options` overrides the rest.
 */
export function testSipProvider(
  trunk: (Partial<SipTrunk> & { port: number }) | null,
  records: DialRecords,
  options: Partial<SipProviderOptions> & { recordingRetentionDays?: number } = {},
): TestSipProvider {
  const { recordingRetentionDays, ...rest } = options;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-sip-'));
  const ended: CallEndedEvent[] = [];
  const sip = new SipVoiceProvider({
    publicAddress: '127.0.0.1',
    bindAddress: '127.0.0.1',
    sipPort: 0,
    rtpPorts: [44000, 44999],
    recordings: new LocalDiskRecordings({
      dir: path.join(dataDir, 'sip', 'recordings'),
      retentionDays: recordingRetentionDays ?? null,
    }),
    records,
    ringTimeoutMs: 5000,
    maxCallMs: 20_000,
    amd: true,
    engine: new ScriptedConversationEngine(),
    // The offline model ports (pocketsphinx, espeak-ng), as a process without model servers has.
    models: buildVoiceModels({ llm: null, stt: null, tts: null }),
    limiter: new MemoryRateLimiter(),
    trunks: {
      forDialing: async (id) =>
        trunk
          ? {
              id,
              host: '127.0.0.1',
              username: null,
              password: null,
              fromNumber: '+14155550100',
              maxCallsPerSecond: null,
              maxConcurrentCalls: null,
              ...trunk,
            }
          : null,
    },
    ...rest,
  });
  sip.onCallEnded(async (event) => {
    ended.push(event);
  });
  return {
    sip,
    ended,
    dataDir,
    async dispose() {
      await sip.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A dial request for an agent with a trunk (or none). */
export const dialRequest = (
  callId: string,
  sipTrunkId: string | null = 'trk_1',
  provider?: string,
): DialRequest => ({
  callId,
  to: '+14155550123',
  attempt: 1,
  agent: { id: 'agt_1', name: 'Phone agent', agentName: 'Ava', language: 'en-us', sipTrunkId, details: {} },
  contact: { id: 'cnt_1', name: 'Jordan' },
  ...(provider ? { provider } : {}),
});
