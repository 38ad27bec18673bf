import fs from 'node:fs';
import path from 'node:path';
import type { RecordedFile, Recording, RecordingStore } from '../../ports.js';

export interface LocalDiskRecordingsOptions {
  /** The folder recordings are kept in (`<OUTDIAL_DATA_DIR>/sip/recordings` by default). */
  dir: string;
  /** Recordings older than this many days are deleted by `prune`; null or absent keeps them. */
  retentionDays?: number | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The default recording store: one WAV file per call in a folder on local disk, written in place
 * while the call runs (a `.part` file next to the kept ones, so keeping it is a rename).
 */
export class LocalDiskRecordings implements RecordingStore {
  constructor(private readonly options: LocalDiskRecordingsOptions) {}

  async scratchPath(callId: string): Promise<string> {
    await fs.promises.mkdir(this.options.dir, { recursive: true });
    return `${this.file(callId)}.part`;
  }

  async put(callId: string, file: RecordedFile): Promise<void> {
    await fs.promises.mkdir(this.options.dir, { recursive: true });
    const target = this.file(callId);
    try {
      await fs.promises.rename(file.path, target);
    } catch (error) {
      // Another file system (a transport's own temp folder): copied, then removed.
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      await fs.promises.copyFile(file.path, target);
      await fs.promises.rm(file.path, { force: true });
    }
  }

  async get(callId: string): Promise<Recording | null> {
    try {
      return { contentType: 'audio/wav', body: await fs.promises.readFile(this.file(callId)) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** Removes the recordings last changed more than the retention ago (none without one). */
  async prune(): Promise<number> {
    const days = this.options.retentionDays;
    if (!days) return 0;
    const cutoff = Date.now() - days * DAY_MS;
    let names: string[];
    try {
      names = await fs.promises.readdir(this.options.dir);
    } catch {
      return 0; // nothing there yet
    }
    let removed = 0;
    for (const name of names) {
      const file = path.join(this.options.dir, name);
      const stat = await fs.promises.stat(file).catch(() => null);
      if (stat && stat.mtimeMs < cutoff) {
        await fs.promises.rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }

  private file(callId: string): string {
    // Call ids are ours (call_...), but a path never leaves the folder whatever it is given.
    return path.join(this.options.dir, `${path.basename(callId)}.wav`);
  }
}
