#!/usr/bin/env node
// Runs the built CLI when `npm run build` has produced dist/, and the TypeScript sources through tsx otherwise.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
if (existsSync(built)) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(fileURLToPath(new URL('../src/cli/index.ts', import.meta.url)));
}
