import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes `content` to `dir/name` unless that file exists; false when it did. The file is written
 * whole under a private name, then published with link(), which fails if the name exists: so it
 * is complete or absent, even if the process is killed halfway (a plain exclusive create could
 * leave an empty file behind), and of two processes publishing one name, exactly one wins.
 */
export function publishOnce(dir: string, name: string, content: string): boolean {
  fs.mkdirSync(dir, { recursive: true });
  const draft = path.join(dir, `${name}.${process.pid}.${Date.now()}.tmp`);
  fs.writeFileSync(draft, content);
  try {
    fs.linkSync(draft, path.join(dir, name));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    fs.rmSync(draft, { force: true });
  }
}
