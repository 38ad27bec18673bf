import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../app.js';

/** Unauthenticated probes for orchestrators: no details, just whether to route traffic here. */
export function registerProbes(app: App, services: Pick<AppServices, 'health'>): void {
  const Probe = Type.Object({ status: Type.String() });
  app.get(
    '/livez',
    { schema: { tags: ['probes'], security: [], summary: 'Process is alive', response: { 200: Probe } } },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['probes'],
        security: [],
        summary: 'Database and cache answer',
        response: { 200: Probe, 503: Probe },
      },
    },
    async (_request, reply) => {
      const report = await services.health.report();
      if (report.status !== 'ok') return reply.status(503).send({ status: 'unavailable' });
      return { status: 'ready' };
    },
  );
}
