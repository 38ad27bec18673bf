import fs from 'node:fs';
import { openApiDocument } from '../src/http/openapi-document.js';
import { VERSION } from '../src/main.js';

/**
 * `npm run openapi -- <file>`: writes the OpenAPI document (the one `GET /api/v1/openapi.json`
 * serves) without a database. Feed it to a client generator (openapi-typescript,
 * openapi-generator) or a linter (Redocly, Spectral: see test/unit/openapi-lint.test.ts).
 */
const out = process.argv[2] ?? 'openapi.json';
fs.writeFileSync(out, `${JSON.stringify(await openApiDocument(VERSION), null, 2)}\n`);
process.stdout.write(`wrote ${out}\n`);
