import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from 'vitest';

/**
 * A maker of temp dirs named `<prefix><random>`, removed after the enclosing describe's tests (or
 * after each test, with `'each'`). Call it in a describe block: it registers the clean-up hook.
 */
export function tempDirs(prefix: string, cleanUp: 'all' | 'each' = 'all'): () => string {
  const dirs: string[] = [];
  (cleanUp === 'each' ? afterEach : afterAll)(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
