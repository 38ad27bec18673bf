import { Type } from '@sinclair/typebox';
import { AnalysedCallFields, DateTime, MetricSchemaField, Nullable } from './common.js';

/** The webhook payloads, for the OpenAPI document's `webhooks` (docs/webhooks.md tells the rest). */
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

const headers = [
  ['x-outdial-signature', 'hex HMAC-SHA256 of the body (comma-separated during a secret rotation)'],
  ['webhook-id', 'the event id, the same on every retry: deduplicate on it'],
  ['webhook-timestamp', 'Unix seconds of this attempt'],
  ['webhook-signature', 'v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"> (Standard Webhooks)'],
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
  'call.completed': hook(
    'onCallComplete and statusCallBackUrl: a call ended (sent after its analysis)',
    CallCompleted,
  ),
  'batch.completed': hook('onBatchComplete: the batch finished', BatchCompleted),
  'batch.failed': hook('onBatchFailed: the batch stopped before finishing', BatchFailed),
};
