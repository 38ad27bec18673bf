import { Type } from '@sinclair/typebox';
import { AnalysedCallFields, DateTime, MetricSchemaField, Nullable } from './common.js';

/** The webhook payloads, for the OpenAPI document's `webhooks` (docs/webhooks.md tells the rest). */
const CallProgress = (event: 'call.started' | 'call.answered') =>
  Type.Object({
    event: Type.Literal(event),
    timestamp: Type.String({
      format: 'date-time',
      description: event === 'call.started' ? 'When the call went out' : 'When the call was answered',
    }),
    call: Type.Object({
      id: Type.String(),
      contactId: Type.String(),
      agentId: Type.String(),
      batchId: Nullable(Type.String()),
      phoneNumber: Type.String(),
      contactName: Type.String(),
      startTime: Type.String({ format: 'date-time', description: 'When the call went out' }),
      answeredAt: Nullable(
        Type.String({ format: 'date-time', description: 'When it was answered; null in call.started' }),
      ),
    }),
  });

const CallCompleted = Type.Object({
  event: Type.Literal('call.completed'),
  success: Type.Boolean({ description: 'status is COMPLETED' }),
  call: Type.Object({
    ...AnalysedCallFields,
    batchId: Nullable(Type.String()),
    recordingUrl: Nullable(Type.String()),
  }),
  metricSchema: MetricSchemaField,
});

const BatchCompleted = Type.Object({
  event: Type.Literal('batch.completed'),
  batchId: Type.String(),
  agentId: Type.String(),
  userId: Type.String(),
  statistics: Type.Object({
    total: Type.Number(),
    processed: Type.Number(),
    succeeded: Type.Number(),
    failed: Type.Number(),
    percentComplete: Type.Number(),
    successRate: Type.Number(),
  }),
  timestamps: Type.Object({ createdAt: DateTime, startedAt: Nullable(DateTime), completedAt: DateTime }),
});

const BatchFailed = Type.Object({
  event: Type.Literal('batch.failed'),
  batchId: Type.String(),
  agentId: Type.String(),
  error: Type.String(),
  code: Type.String({ description: 'e.g. INSUFFICIENT_CREDITS' }),
  timestamp: DateTime,
});

const BatchStatusChanged = (event: 'batch.paused' | 'batch.resumed') =>
  Type.Object({
    event: Type.Literal(event),
    batchId: Type.String(),
    agentId: Type.String(),
    userId: Type.String(),
    status: Type.Union(
      ['paused', 'scheduled', 'pending', 'processing'].map((status) => Type.Literal(status)),
      { description: 'The batch status after the event' },
    ),
    pauseReason: Type.Union([Type.Literal('operator'), Type.Literal('dependency-unavailable')], {
      description:
        event === 'batch.paused'
          ? 'Why the batch was paused: by its operator, or because a dependency its agent needs (a model endpoint, a SIP trunk) is unavailable; such a batch resumes on its own once the dependency answers again'
          : 'Why the pause this resume ends began: operator, or dependency-unavailable (resumed on its own once the dependency answered a probe, or by the operator)',
    }),
    dependency: Type.Union([Type.String(), Type.Null()], {
      description:
        "With dependency-unavailable: the dependency's breaker key, e.g. llm:http://10.0.0.5:8000/v1 or trunk:trk_…",
    }),
    timestamp: DateTime,
  });

const BatchCancelled = Type.Object({
  event: Type.Literal('batch.cancelled'),
  batchId: Type.String(),
  agentId: Type.String(),
  userId: Type.String(),
  status: Type.Literal('cancelled'),
  cancelledJobs: Type.Integer({ description: 'Contacts that will not be dialed because of the cancel' }),
  timestamp: DateTime,
});

const headers = [
  [
    'x-outdial-signature',
    'hex HMAC-SHA256 of the body with the current secret: always one value (during the 24 h after a rotation, verify webhook-signature instead)',
  ],
  ['webhook-id', 'the event id, the same on every retry: deduplicate on it'],
  ['webhook-timestamp', 'Unix seconds of this attempt'],
  [
    'webhook-signature',
    'v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"> (Standard Webhooks); during the 24 h after a rotation two, space-separated: the new secret\'s, then the old one\'s',
  ],
].map(([name, description]) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' },
}));

const hook = (summary: string, schema: object) => ({
  post: {
    summary,
    parameters: headers,
    requestBody: { required: true, content: { 'application/json': { schema } } },
    responses: {
      '200': { description: 'Any 2xx within 30 s: delivered' },
      '410': { description: 'Gone: outdial stops retrying this delivery' },
    },
  },
});

export const WEBHOOKS = {
  'call.started': hook(
    'onCallEvent, and statusCallBackUrl when statusCallBackEvents has it: a call was dialed',
    CallProgress('call.started'),
  ),
  'call.answered': hook(
    'onCallEvent, and statusCallBackUrl when statusCallBackEvents has it: a call was answered',
    CallProgress('call.answered'),
  ),
  'call.completed': hook(
    'onCallComplete, and statusCallBackUrl unless statusCallBackEvents leaves it out: a call ended (sent after its analysis)',
    CallCompleted,
  ),
  'batch.completed': hook('onBatchComplete: the batch finished', BatchCompleted),
  'batch.failed': hook('onBatchFailed: the batch stopped before finishing', BatchFailed),
  'batch.paused': hook(
    'onBatchEvent, else onBatchComplete: the batch was paused, by its operator or because a dependency became unavailable (pauseReason)',
    BatchStatusChanged('batch.paused'),
  ),
  'batch.resumed': hook(
    'onBatchEvent, else onBatchComplete: the batch was resumed, by its operator or on its own once the dependency that paused it answered again',
    BatchStatusChanged('batch.resumed'),
  ),
  'batch.cancelled': hook('onBatchEvent, else onBatchComplete: the batch was cancelled', BatchCancelled),
};
