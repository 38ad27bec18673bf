import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const files = sourceFiles(SRC).map((file) => ({
  name: path.relative(SRC, file).split(path.sep).join('/'),
  text: fs.readFileSync(file, 'utf8'),
}));

/** Where SQL may be written: the repositories, and the database's own plumbing beside them. */
describe('SQL lives in the repositories', () => {
  it('names no file outside adapters/postgres/repos but the driver, the dialect and the migrations', () => {
    const outside = files
      .filter(({ text }) => /from 'kysely'|sql`/.test(text))
      .map(({ name }) => name)
      .filter((name) => !name.startsWith('adapters/postgres/repos/'))
      .sort();
    expect(outside).toEqual([
      'adapters/postgres/database.ts',
      'adapters/postgres/migrate.ts',
      'adapters/postgres/pglite-dialect.ts',
    ]);
  });

  it('leaves the transports and the workers without a way to the database but the ports they are given', () => {
    const reaching = files
      .filter(({ name }) => name.startsWith('adapters/voice/') || name.startsWith('workers/'))
      .filter(({ text }) => /from '[./]*(adapters\/)?postgres\/|from 'kysely'/.test(text))
      .map(({ name }) => name);
    expect(reaching).toEqual([]);
  });
});
