#!/usr/bin/env node
// Runs the CLI's built JavaScript from dist/. In a checkout (src/ and TypeScript installed), dist/ is
// built first when it is missing or older than the sources, and the start says so: `npm start` runs
// this file, and built JavaScript starts faster and smaller than the sources through tsx
// (scripts/build.mjs). An installed package runs the dist/ it ships.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
const buildScript = new URL('../scripts/build.mjs', import.meta.url);

let useBuilt = existsSync(built);
if (existsSync(fileURLToPath(buildScript))) {
  const { buildIfStale, canBuild } = await import(buildScript.href);
  if (canBuild()) {
    const outcome = await buildIfStale();
    if (outcome === 'failed') {
      process.stderr.write('The build failed (above): running the sources through tsx instead\n');
    }
    useBuilt = outcome !== 'failed';
  }
}

if (useBuilt) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(fileURLToPath(new URL('../src/cli/index.ts', import.meta.url)));
}
