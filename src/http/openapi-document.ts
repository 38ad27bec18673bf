import pino from 'pino';
import { Metrics } from '../metrics.js';
import { buildApp } from './app.js';

/**
 * The OpenAPI document `GET /api/v1/openapi.json` serves, built without a database or a listening
 * socket: routes reach their services only when a request comes, so none is needed to describe
 * them. `npm run openapi` writes it; the linter tests read it.
 */
export async function openApiDocument(version: string): Promise<Record<string, unknown>> {
  const app = await buildApp({
    services: {} as never,
    adminToken: 'document-only-admin-token',
    jwtSecret: 'document-only-jwt-secret-0123456789-abcdef',
    secureCookies: false,
    metrics: new Metrics(),
    metricsAllow: [],
    sampleGauges: async () => {},
    logger: pino({ level: 'silent' }),
    version,
  });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
