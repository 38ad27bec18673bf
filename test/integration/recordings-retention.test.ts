import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalDiskRecordings } from '../../src/adapters/recordings/local-disk.js';
import { RecordingPruner } from '../../src/workers/recording-pruner.js';
import { STORE, startTestApp, type TestApp } from '../helpers/app.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A recording file `days` old in `dir`; returns its path. */
function recordingAged(dir: string, name: string, days: number): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, 'RIFF');
  const at = new Date(Date.now() - days * DAY_MS);
  fs.utimesSync(file, at, at);
  return file;
}

describe(`recording retention (${STORE})`, () => {
  let app: TestApp | null = null;
  afterEach(async () => {
    await app?.close();
    app = null;
  });

  it("keeps every transport's recordings on this host to their retention, from the moment the service starts", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-retention-'));
    const sip = path.join(dataDir, 'sip', 'recordings');
    const web = path.join(dataDir, 'web', 'recordings');
    const sim = path.join(dataDir, 'sim', 'recordings');
    const gone = [
      recordingAged(sip, 'call_sip_old.wav', 31),
      recordingAged(web, 'call_web_old.wav', 31),
      // Simulated recordings are a cache made again on request: a week at most, whatever the setting.
      recordingAged(sim, 'call_sim_old.wav', 8),
    ];
    const kept = [
      recordingAged(sip, 'call_sip_new.wav', 29),
      recordingAged(web, 'call_web_new.wav', 29),
      recordingAged(sim, 'call_sim_new.wav', 6),
    ];
    // No worker is started: the API role holds calls (single dials, web calls) and prunes too.
    app = await startTestApp({
      env: { OUTDIAL_DATA_DIR: dataDir, OUTDIAL_RECORDING_RETENTION_DAYS: '30' },
    });
    await expect.poll(() => gone.filter((file) => fs.existsSync(file))).toEqual([]);
    expect(kept.filter((file) => fs.existsSync(file))).toEqual(kept);
  });
});

describe('RecordingPruner', () => {
  it('prunes every store by its own retention, and a store that fails does not stop the others', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-pruner-'));
    const old = recordingAged(dir, 'call_old.wav', 10);
    const young = recordingAged(dir, 'call_young.wav', 2);
    const warnings: Array<Record<string, unknown>> = [];
    const broken = new LocalDiskRecordings({ dir, retentionDays: 1 });
    broken.prune = () => Promise.reject(new Error('disk gone'));
    const pruner = new RecordingPruner(
      [
        { name: 'broken', store: broken },
        { name: 'kept-forever', store: new LocalDiskRecordings({ dir }) },
        { name: 'week', store: new LocalDiskRecordings({ dir, retentionDays: 7 }) },
      ],
      { warn: (fields: Record<string, unknown>) => warnings.push(fields) } as never,
    );
    expect(await pruner.prune()).toBe(1);
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.existsSync(young)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ recordings: 'broken' });
  });
});
