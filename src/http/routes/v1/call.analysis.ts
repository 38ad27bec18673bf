import { type Static, Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import { legacySchema, markDeprecated } from '../../paging.js';
import { type App, type AppServices, assertOwnUser } from '../../route-kit.js';
import { AnalysedCallFields, errorResponses, Id, MetricSchemaField } from '../../schemas/common.js';

const SummaryBody = Type.Object(
  {
    callId: Id('The call to summarise'),
    transcription: Type.Array(
      Type.Object(
        {
          role: Type.Union([Type.Literal('assistant'), Type.Literal('user')]),
          content: Type.String({ maxLength: 20_000 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 2000, description: 'The conversation to analyse' },
    ),
    userId: Type.Optional(Id('When given, it must be the API key’s user')),
  },
  { additionalProperties: false },
);

const SummaryReply = Type.Object({
  success: Type.Boolean(),
  summary: Type.String({ description: 'The summary text (the same on every request for the call)' }),
  customMetricsProcessed: Type.Integer({
    description: "How many of the agent's custom metrics were evaluated",
  }),
});

const MetricsReply = Type.Object({
  success: Type.Boolean(),
  call: Type.Object(AnalysedCallFields),
  metricSchema: MetricSchemaField,
});

const MetricsQuery = Type.Object(
  {
    callId: Id('The call'),
    agentId: Id('The agent that made the call'),
    contactId: Id('The contact called'),
    userId: Type.Optional(Id('When given, it must be the API key’s user')),
  },
  { additionalProperties: false },
);

const CURRENT_METRIC_PATH = '/api/v1/call/get-metric';
const LEGACY_METRIC_PATH = '/api/private/call/get-metric';

export function registerCallAnalysis(app: App, services: Pick<AppServices, 'analysis'>): void {
  app.post(
    '/api/v1/call/create-summary',
    {
      schema: {
        tags: ['calls'],
        operationId: 'createCallSummary',
        summary: 'Summarize a call',
        description:
          'Summary and metrics of an ended call from its transcription; idempotent (a stored summary is returned, never regenerated).',
        body: SummaryBody,
        response: { 200: SummaryReply, ...errorResponses(400, 401, 403, 404, 409, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof SummaryBody>;
      assertOwnUser(auth.userId, body.userId);
      return services.analysis.createSummary(auth.userId, body.callId, body.transcription);
    },
  );

  const metrics = async (request: {
    auth: Parameters<typeof requireAuth>[0]['auth'];
    query: Static<typeof MetricsQuery>;
  }) => {
    const auth = requireAuth(request);
    assertOwnUser(auth.userId, request.query.userId);
    const { callId, agentId, contactId } = request.query;
    return services.analysis.metrics(auth.userId, { callId, agentId, contactId });
  };
  const schema = {
    tags: ['calls'],
    querystring: MetricsQuery,
    response: { 200: MetricsReply, ...errorResponses(400, 401, 403, 404, 500) },
  };
  app.get(
    CURRENT_METRIC_PATH,
    {
      schema: {
        ...schema,
        operationId: 'getCallMetrics',
        summary: "A call's metrics",
        description:
          "A call's summary, its metrics and the JSON Schema they follow. `userId` is optional: the API key names the user.",
      },
    },
    (request) => metrics(request),
  );
  app.get(
    LEGACY_METRIC_PATH,
    {
      schema: legacySchema(schema, {
        operationId: 'getCallMetricsLegacy',
        summary: "A call's metrics (deprecated)",
        successor: CURRENT_METRIC_PATH,
      }),
    },
    async (request, reply) => {
      markDeprecated(reply, CURRENT_METRIC_PATH);
      return metrics(request);
    },
  );
}
