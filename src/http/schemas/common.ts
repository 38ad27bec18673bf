import { type TSchema, Type } from '@sinclair/typebox';
import { CALL_STATUSES, type CallStatus } from '../../domain/call.js';

/** An id in a query string or path: bounded so that a megabyte of garbage never reaches SQL. */
export const Id = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    details: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { $id: 'ErrorBody', description: "The spec's error body" },
);

/** Responses every authenticated endpoint may give, besides its own. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const descriptions: Record<number, string> = {
    400: 'Validation failed or a parameter is missing',
    401: 'Invalid or missing API key',
    402: 'Insufficient call minutes',
    403: 'Access denied',
    404: 'Resource not found',
    408: 'The request was not received in time',
    409: 'Conflict',
    413: 'Body too large',
    414: 'A path parameter is longer than 100 characters',
    415: 'The body is not application/json',
    429: 'Too many calls in progress for this user (code CONCURRENCY_LIMIT)',
    431: 'Request line and headers over 16 KB',
    500: 'Unexpected failure',
    502: 'Voice provider failure',
    503: 'A dependency is down',
  };
  const out: Record<number, TSchema> = {};
  for (const status of statuses)
    out[status] = Type.Ref(ErrorBody, { description: descriptions[status] ?? '' });
  return out;
}

export const CallStatusSchema = Type.Unsafe<CallStatus>({
  type: 'string',
  enum: [...CALL_STATUSES],
  description: 'ONGOING while the call is up; one of the final states after',
});

export const TranscriptEntrySchema = Type.Object({
  role: Type.Union([Type.Literal('assistant'), Type.Literal('user')]),
  content: Type.String(),
});

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const DateTime = Type.String({ format: 'date-time' });

export const BasicDetailsSchema = Type.Object(
  {
    dialId: Type.Optional(Type.String({ maxLength: 200 })),
    voiceId: Type.Optional(Type.String({ maxLength: 200 })),
    agent_name: Type.Optional(Type.String({ maxLength: 200 })),
    voiceSpeed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
    voiceGender: Type.Optional(Type.String({ maxLength: 50 })),
    agentLanguage: Type.Optional(Type.String({ maxLength: 35 })),
  },
  { additionalProperties: true, description: 'Voice configuration; other keys are kept as given' },
);

export const CustomMetricSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
    type: Type.Union([
      Type.Literal('boolean'),
      Type.Literal('number'),
      Type.Literal('string'),
      Type.Literal('enum'),
    ]),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const MetricConfigSchema = Type.Object(
  {
    enabled: Type.Boolean(),
    customMetrics: Type.Array(CustomMetricSchema, { maxItems: 50 }),
  },
  { additionalProperties: false },
);

export const AgentSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    createdAt: DateTime,
    updatedAt: DateTime,
    type: Type.Union([Type.Literal('OUTBOUND'), Type.Literal('INBOUND')]),
    isActive: Type.Boolean(),
    basicDetails: BasicDetailsSchema,
    metricConfig: MetricConfigSchema,
    sipTrunkId: Nullable(Type.String()),
  },
  { $id: 'Agent' },
);

export const LiveCallStatusSchema = Type.Object(
  {
    callId: Type.String(),
    status: CallStatusSchema,
    startTime: DateTime,
    phoneNumber: Type.String(),
    contactId: Type.String(),
    batchId: Nullable(Type.String()),
    error: Nullable(Type.String()),
    duration: Nullable(Type.Number({ description: 'Seconds; null while the call is ongoing' })),
    recordingUrl: Nullable(Type.String()),
  },
  { $id: 'LiveCallStatus' },
);

/**
 * The spec's ended call with its analysis ("the service"): the call of get-metric, and with
 * batchId and recordingUrl the call of the onCallComplete webhook.
 */
export const AnalysedCallFields = {
  id: Type.String(),
  contactId: Type.String(),
  agentId: Type.String(),
  status: CallStatusSchema,
  startTime: DateTime,
  endTime: Nullable(DateTime),
  duration: Nullable(Type.Number()),
  phoneNumber: Type.String(),
  contactName: Type.String(),
  transcription: Type.Array(TranscriptEntrySchema),
  summary: Nullable(Type.String({ description: 'Null until the analysis has run' })),
  metricJson: Nullable(Type.Object({}, { additionalProperties: true })),
};

/** The JSON Schema of an analysed call's metricJson. */
export const MetricSchemaField = Type.Object(
  {},
  { additionalProperties: true, description: 'JSON Schema of metricJson' },
);
