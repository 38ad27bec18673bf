import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../route-kit.js';

/** Unauthenticated probes for orchestrators: no details, just whether to route traffic here. */
export function registerProbes(app: App, services: Pick<AppServices, 'health'>): void {
  const Probe = Type.Object({ status: Type.String() });
  app.get(
    '/livez',
    {
      schema: {
        tags: ['probes'],
        security: [],
        operationId: 'getLiveness',
        summary: 'Liveness probe',
        description: 'Answers 200 while the process runs; no dependency is checked. No authentication.',
        response: { 200: Probe },
      },
    },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['probes'],
        security: [],
        operationId: 'getReadiness',
        summary: 'Readiness probe',
        description:
          '200 when the database and the live cache answer, 503 otherwise: whether to route traffic here. No authentication.',
        response: { 200: Probe, 503: Probe },
      },
    },
    async (_request, reply) => {
      const report = await services.health.core();
      if (!report.ok) return reply.status(503).send({ status: 'unavailable' });
      return { status: 'ready' };
    },
  );
}
