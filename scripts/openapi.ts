import fs from 'node:fs';
import pino from 'pino';
import { buildApp } from '../src/http/app.js';
import { VERSION } from '../src/main.js';
import { Metrics } from '../src/metrics.js';

/**
 * `npm run openapi -- <file>`: writes the OpenAPI document (the one `GET /api/v1/openapi.json`
 * serves) without a database, since routes only reach their services when a request comes. Feed
 * it to a client generator (openapi-typescript, openapi-generator).
 */
const out = process.argv[2] ?? 'openapi.json';
const app = await buildApp({
  services: {} as never,
  adminToken: 'document-only-admin-token',
  jwtSecret: 'document-only-jwt-secret-0123456789-abcdef',
  secureCookies: false,
  metrics: new Metrics(),
  metricsAllow: [],
  sampleGauges: async () => {},
  logger: pino({ level: 'silent' }),
  version: VERSION,
});
await app.ready();
fs.writeFileSync(out, `${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
process.stdout.write(`wrote ${out}\n`);
