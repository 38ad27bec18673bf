import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/adapters/postgres/database.js';
import {
  BUNDLED_IMAGE_DIR,
  installedPgliteVersion,
  packImage,
} from '../src/adapters/postgres/pglite-image.js';

/**
 * `npm run build:pgimage` (this file): makes the embedded database image that a first start unpacks
 * instead of running initdb. Run it after upgrading @electric-sql/pglite (a first start warns and
 * falls back to initdb until then, and test/unit/pglite-image.test.ts fails), and commit the two
 * files it writes. The image is the empty cluster, before any migration: adding a migration does not
 * change it.
 */
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-pgimage-'));
try {
  const dataDir = path.join(work, 'pgdata');
  // Made by the same code and options as a first start without an image, then closed cleanly, so the
  // image is exactly what initdb would have left (a shutdown checkpoint, nothing to recover).
  const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: dataDir, pgliteImage: null });
  await handle.close();
  const manifest = packImage(dataDir, BUNDLED_IMAGE_DIR, installedPgliteVersion());
  process.stdout.write(
    `Wrote ${path.relative(process.cwd(), path.join(BUNDLED_IMAGE_DIR, manifest.image))}: PostgreSQL ${manifest.postgres}, PGlite ${manifest.pglite}, ${manifest.files} files, ${(manifest.unpackedBytes / 1e6).toFixed(1)} MB -> ${(manifest.bytes / 1e6).toFixed(2)} MB\n`,
  );
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
