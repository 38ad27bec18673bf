import { type TSchema, Type } from '@sinclair/typebox';
import { BREAKER_STATES, type BreakerState } from '../../../domain/breaker.js';
import { DEPENDENCY_KINDS, type DependencyKind } from '../../../domain/dependencies.js';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { DateTime, errorResponses } from '../../schemas/common.js';

const Dependency = Type.Object({
  status: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  kind: Type.String({ description: 'postgres, pglite, redis or memory' }),
  latencyMs: Type.Number(),
  error: Type.Optional(Type.String()),
});

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const OutsideDependency = Type.Object({
  key: Type.String({
    description:
      "The dependency's circuit breaker key: llm:<url>, stt:<url>, tts:<url>, realtime:<url>, trunk:<trunk id>",
  }),
  kind: Type.Unsafe<DependencyKind>({ type: 'string', enum: [...DEPENDENCY_KINDS] }),
  name: Type.String({
    description: 'What it is, for a person: the model and its URL, or the trunk and its host',
  }),
  status: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('unknown')], {
    description:
      'down while its breaker holds calls back or its last check failed; unknown when never checked',
  }),
  breaker: Type.Unsafe<BreakerState>({
    type: 'string',
    enum: [...BREAKER_STATES],
    description:
      'closed: calls go through; open: no new call that needs it is placed (batches pause, single dials get 503 DEPENDENCY_UNAVAILABLE) until a probe answers; half-open: a probe is in flight',
  }),
  since: Nullable(DateTime),
  lastSuccessAt: Nullable(DateTime),
  lastFailureAt: Nullable(DateTime),
  lastError: Nullable(Type.String()),
  latencyMs: Nullable(Type.Number({ description: 'The round trip of the last check' })),
  checkedAt: Nullable(DateTime),
});

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
    description:
      'degraded when the database or the cache is down, or any dependency is down (an open breaker)',
  }),
  database: Dependency,
  cache: Dependency,
  dependencies: Type.Array(OutsideDependency, {
    description:
      "Each model endpoint this deployment's calls use (chat, speech-to-text, text-to-speech, realtime) and each of your SIP trunks. A closed one is checked for real (a 1-token completion, a tiny transcription or synthesis, SIP OPTIONS) at most every 30 s",
  }),
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
        description:
          'Backend connectivity: database and live cache reachability with latency, and each outside dependency of your calls (model endpoints, your SIP trunks) with its circuit breaker state, last success, last error and latency. 503 when degraded.',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: Health, 503: Health, ...errorResponses(401, 500) },
      },
    },
    async (request, reply) => {
      const report = await services.health.report(requireAuth(request).userId);
      return reply.status(report.status === 'ok' ? 200 : 503).send(report);
    },
  );
}
