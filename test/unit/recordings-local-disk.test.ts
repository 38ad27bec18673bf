import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalDiskRecordings } from '../../src/adapters/recordings/local-disk.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/** The default recording store: files in a folder of the data dir, kept by rename, pruned by age. */
describe('recordings on local disk', () => {
  const tempDir = tempDirs('outdial-recordings-', 'each');

  it('keeps a finished recording written at its scratch path, and serves it back', async () => {
    const dir = path.join(tempDir(), 'sip', 'recordings');
    const store = new LocalDiskRecordings({ dir });
    const scratch = await store.scratchPath('call_1');
    expect(path.dirname(scratch)).toBe(dir);
    fs.writeFileSync(scratch, 'RIFF....WAVE');
    await store.put('call_1', { path: scratch, contentType: 'audio/wav' });
    expect(fs.existsSync(scratch)).toBe(false);
    const kept = await store.get('call_1');
    expect(kept).toEqual({ contentType: 'audio/wav', body: Buffer.from('RIFF....WAVE') });
    expect(await store.get('call_none')).toBeNull();
    // A path never leaves the folder, whatever id it is given.
    expect(await store.get('../../etc/passwd')).toBeNull();
  });

  it('takes a file from elsewhere, and prunes what is past the retention only', async () => {
    const dir = path.join(tempDir(), 'recordings');
    const store = new LocalDiskRecordings({ dir, retentionDays: 30 });
    const elsewhere = path.join(tempDir(), 'made-by-a-transport.wav');
    fs.writeFileSync(elsewhere, 'audio');
    await store.put('call_new', { path: elsewhere, contentType: 'audio/wav' });
    const old = path.join(dir, 'call_old.wav');
    fs.writeFileSync(old, 'old');
    const daysAgo = new Date(Date.now() - 31 * 24 * 60 * 60 * 1000);
    fs.utimesSync(old, daysAgo, daysAgo);
    expect(await store.prune()).toBe(1);
    expect(await store.get('call_old')).toBeNull();
    expect((await store.get('call_new'))?.body.toString()).toBe('audio');
    // No retention: nothing is pruned.
    expect(await new LocalDiskRecordings({ dir }).prune()).toBe(0);
  });
});
