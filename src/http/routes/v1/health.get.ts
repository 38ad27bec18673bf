import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';

const Dependency = Type.Object({
  status: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  kind: Type.String({ description: 'postgres, pglite, redis or memory' }),
  latencyMs: Type.Number(),
  error: Type.Optional(Type.String()),
});

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  database: Dependency,
  cache: Dependency,
  uptimeSeconds: Type.Number(),
  version: Type.String(),
});

export function registerHealthGet(app: App, services: Pick<AppServices, 'health'>): void {
  app.get(
    '/api/v1/health',
    {
      schema: {
        tags: ['probes'],
        operationId: 'getHealth',
        summary: 'Backend health',
        description: 'Backend connectivity: database and live cache reachability with latency.',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: Health, 503: Health, ...errorResponses(401, 500) },
      },
    },
    async (_request, reply) => {
      const report = await services.health.report();
      return reply.status(report.status === 'ok' ? 200 : 503).send(report);
    },
  );
}
