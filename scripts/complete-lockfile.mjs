// The npm registry this project's machines reach serves only some of Biome's platform binaries;
// `npm install` then leaves the others out of package-lock.json and `npm ci` refuses the lock.
// This adds them back as optional, platform-restricted entries, which npm skips on every other
// platform without fetching. Run it after any change to the lock: node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const biome = lock.packages['node_modules/@biomejs/biome'];
const platforms = {
  'cli-android-arm64': { os: ['android'], cpu: ['arm64'] },
  'cli-android-x64': { os: ['android'], cpu: ['x64'] },
  'cli-darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
  'cli-darwin-x64': { os: ['darwin'], cpu: ['x64'] },
  'cli-linux-arm64': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
  'cli-linux-x64': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  'cli-linux-arm64-musl': { os: ['linux'], cpu: ['arm64'], libc: ['musl'] },
  'cli-linux-x64-musl': { os: ['linux'], cpu: ['x64'], libc: ['musl'] },
  'cli-win32-arm64': { os: ['win32'], cpu: ['arm64'] },
  'cli-win32-x64': { os: ['win32'], cpu: ['x64'] },
};
let added = 0;
for (const [name, platform] of Object.entries(platforms)) {
  const key = `node_modules/@biomejs/${name}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = {
    version: biome.version,
    dev: true,
    optional: true,
    license: 'MIT OR Apache-2.0',
    ...platform,
  };
  added++;
}
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
