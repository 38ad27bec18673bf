import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

/**
 * The embedded database's first start from a pre-initialised image instead of PGlite's initdb.
 *
 * initdb inside PGlite runs a second PGlite instance beside the first and copies its heap: 2.4-3 s
 * and 770-900 MB of peak memory here (10-23 s on a busy machine), more than a 1 GB host can give.
 * Unpacking an empty cluster made by that same initdb takes 0.2-0.6 s (creating its 971 files is
 * most of it) and ~30 MB, and PGlite then opens it as an existing database. The image is a tar of the data dir compressed with brotli
 * (40 MB of files, 1.3 MB compressed: the three near-identical template databases fall within
 * brotli's 16 MB window, gzip's 32 KB window sees none of that and gives 4.5 MB).
 */

export interface PgliteImageManifest {
  /** The @electric-sql/pglite version whose initdb made the image: the only one allowed to open it. */
  pglite: string;
  /** PG_VERSION of the cluster, for the record. */
  postgres: string;
  /** File name of the image beside the manifest. */
  image: string;
  /** sha256 of the image file, hex: a truncated or altered file is refused before it is unpacked. */
  sha256: string;
  bytes: number;
  unpackedBytes: number;
  files: number;
}

export type ImageCheck =
  | { usable: true; manifest: PgliteImageManifest; imagePath: string; data: Buffer }
  | { usable: false; reason: string };

export const MANIFEST_FILE = 'pgdata.json';
export const IMAGE_FILE = 'pgdata.tar.br';
/** Where the bundled image lives: beside this module, in src/ and (copied by the build) in dist/. */
export const BUNDLED_IMAGE_DIR = fileURLToPath(new URL('./pgimage', import.meta.url));
/** PGlite takes a data dir holding this file for an existing cluster; it is written last. */
const MARKER = 'PG_VERSION';
/** Our own lock file (see database.ts), never part of an image. */
const NOT_IMAGED = new Set(['outdial.lock']);

export function installedPgliteVersion(): string {
  const require = createRequire(import.meta.url);
  // The package exports no package.json; its main file sits in dist/, one level below it.
  const main = require.resolve('@electric-sql/pglite');
  const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(main), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Whether the image in `dir` can initialise a data dir for the installed PGlite, and why not. */
export function checkImage(dir: string): ImageCheck {
  let installed: string;
  try {
    installed = installedPgliteVersion();
  } catch (error) {
    return {
      usable: false,
      reason: `the installed PGlite's version is unknown (${(error as Error).message})`,
    };
  }
  const manifestPath = path.join(dir, MANIFEST_FILE);
  if (!fs.existsSync(manifestPath)) return { usable: false, reason: `there is no database image in ${dir}` };
  let manifest: PgliteImageManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as PgliteImageManifest;
  } catch {
    return { usable: false, reason: `the database image manifest ${manifestPath} is not valid JSON` };
  }
  if (manifest.pglite !== installed) {
    return {
      usable: false,
      reason: `the bundled database image was made by PGlite ${manifest.pglite}, but PGlite ${installed} is installed`,
    };
  }
  const imagePath = path.join(dir, manifest.image);
  if (!fs.existsSync(imagePath))
    return { usable: false, reason: `the database image ${imagePath} is missing` };
  const data = fs.readFileSync(imagePath);
  if (createHash('sha256').update(data).digest('hex') !== manifest.sha256) {
    return { usable: false, reason: `the database image ${imagePath} does not match its checksum` };
  }
  return { usable: true, manifest, imagePath, data };
}

/**
 * Unpacks the image into `dir`, streaming (a few 256 KB buffers, never the 40 MB tar). PG_VERSION is
 * written last, so a first start killed midway leaves a dir that the next start unpacks again
 * instead of opening half a cluster.
 */
export async function unpackImage(data: Buffer, dir: string): Promise<void> {
  const unpacker = new Unpacker(path.resolve(dir));
  try {
    await pipeline(
      Readable.from([data]),
      // 256 KB pieces: a third of the time of the default 16 KB (73 vs 209 ms for the 40 MB, measured).
      zlib.createBrotliDecompress({ chunkSize: 256 * 1024 }),
      async (source: AsyncIterable<Buffer>) => {
        for await (const chunk of source) unpacker.push(chunk);
      },
    );
    unpacker.finish();
  } finally {
    unpacker.close();
  }
}

/** Reads a ustar stream chunk by chunk: headers, file contents and their padding to 512 bytes. */
class Unpacker {
  private pending: Buffer = Buffer.alloc(0);
  private skip = 0;
  private entry: { fd: number | null; left: number; pad: number } | null = null;
  private marker: { target: string; chunks: Buffer[] } | null = null;
  private ended = false;

  constructor(private readonly root: string) {}

  push(chunk: Buffer): void {
    const buffer = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    while (!this.ended) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, buffer.length - at);
        at += n;
        this.skip -= n;
        if (this.skip > 0) break;
      }
      const entry = this.entry;
      if (entry) {
        const n = Math.min(entry.left, buffer.length - at);
        if (n > 0 && entry.fd !== null) fs.writeSync(entry.fd, buffer, at, n);
        else if (n > 0) this.marker?.chunks.push(Buffer.from(buffer.subarray(at, at + n)));
        at += n;
        entry.left -= n;
        if (entry.left > 0) break;
        if (entry.fd !== null) fs.closeSync(entry.fd);
        this.entry = null;
        this.skip = entry.pad;
        continue;
      }
      if (buffer.length - at < 512) break;
      const header = buffer.subarray(at, at + 512);
      at += 512;
      if (header.every((byte) => byte === 0)) this.ended = true;
      else this.open(header);
    }
    this.pending = buffer.subarray(at);
  }

  finish(): void {
    if (!this.ended || this.entry) throw new Error('the database image is cut short');
    if (!this.marker) throw new Error(`the database image holds no ${MARKER}`);
    fs.writeFileSync(this.marker.target, Buffer.concat(this.marker.chunks), { mode: 0o600 });
  }

  close(): void {
    if (this.entry?.fd != null) fs.closeSync(this.entry.fd);
    this.entry = null;
  }

  private open(header: Buffer): void {
    const name = cString(header, 0, 100);
    const size = Number.parseInt(cString(header, 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156] ?? 0);
    const target = path.resolve(this.root, name);
    if (!target.startsWith(this.root + path.sep) || !Number.isSafeInteger(size) || size < 0)
      throw new Error(`bad entry in the database image: ${name}`);
    if (type === '5') {
      fs.mkdirSync(target, { recursive: true, mode: 0o700 });
      return;
    }
    if (type !== '0' && type !== '\0') throw new Error(`unexpected entry type ${type} in the database image`);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    const pad = (512 - (size % 512)) % 512;
    if (name === MARKER) {
      this.marker = { target, chunks: [] };
      this.entry = { fd: null, left: size, pad };
    } else {
      this.entry = { fd: fs.openSync(target, 'w', 0o600), left: size, pad };
    }
  }
}

/** Removes what an unusable image left in `dir` (every entry but our lock), so initdb starts clean. */
export function clearUnpacked(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    if (!NOT_IMAGED.has(name)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Packs a cleanly closed data dir into `outDir` as the image and its manifest (run by
 * scripts/build-pgimage.ts). Entries are sorted so that the same files give the same tar.
 */
export function packImage(
  dataDir: string,
  outDir: string,
  pglite: string,
  /** Brotli's 0-11: 11 takes ~15 s and gives the smallest image; a test takes 1. */
  quality = 11,
): PgliteImageManifest {
  const blocks: Buffer[] = [];
  let files = 0;
  let unpackedBytes = 0;
  const walk = (relative: string) => {
    for (const name of fs.readdirSync(path.join(dataDir, relative)).sort()) {
      if (relative === '' && NOT_IMAGED.has(name)) continue;
      const rel = relative ? `${relative}/${name}` : name;
      const stat = fs.statSync(path.join(dataDir, rel));
      if (stat.isDirectory()) {
        blocks.push(tarHeader(`${rel}/`, 0, '5'));
        walk(rel);
      } else if (stat.isFile()) {
        const content = fs.readFileSync(path.join(dataDir, rel));
        blocks.push(
          tarHeader(rel, content.length, '0'),
          content,
          Buffer.alloc((512 - (content.length % 512)) % 512),
        );
        files += 1;
        unpackedBytes += content.length;
      } else {
        throw new Error(`${rel} is neither a file nor a directory`);
      }
    }
  };
  walk('');
  blocks.push(Buffer.alloc(1024));
  const tar = Buffer.concat(blocks);
  const image = zlib.brotliCompressSync(tar, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
      // 16 MB: the window must span one template database's files (7 MB) to reuse them for the next.
      [zlib.constants.BROTLI_PARAM_LGWIN]: 24,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
    },
  });
  const manifest: PgliteImageManifest = {
    pglite,
    postgres: fs.readFileSync(path.join(dataDir, MARKER), 'utf8').trim(),
    image: IMAGE_FILE,
    sha256: createHash('sha256').update(image).digest('hex'),
    bytes: image.length,
    unpackedBytes,
    files,
  };
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, IMAGE_FILE), image);
  fs.writeFileSync(path.join(outDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** A ustar header: enough of the format for regular files and directories with short names. */
function tarHeader(name: string, size: number, type: '0' | '5'): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`path too long for the image: ${name}`);
  const header = Buffer.alloc(512);
  header.write(name, 0, 'utf8');
  header.write(`${(type === '5' ? 0o700 : 0o600).toString(8).padStart(7, '0')}\0`, 100, 'ascii');
  header.write('0000000\0', 108, 'ascii');
  header.write('0000000\0', 116, 'ascii');
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  header.write(`${'0'.padStart(11, '0')}\0`, 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write(type, 156, 'ascii');
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return header;
}

function cString(buffer: Buffer, start: number, length: number): string {
  const field = buffer.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString('utf8');
}
