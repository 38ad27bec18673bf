import { Type } from '@sinclair/typebox';
import { BATCH_STATUSES, type BatchStatus } from '../../../domain/batch.js';
import { THROTTLE_REASONS, type ThrottleReason } from '../../../domain/throttle.js';
import { CallStatusSchema, DateTime, Id, Nullable } from '../../schemas/common.js';

export const BatchStatusSchema = Type.Unsafe<BatchStatus>({ type: 'string', enum: [...BATCH_STATUSES] });

/** One object with the reason's fields (a union would make each client tell the shapes apart by hand). */
export const ThrottleSchema = Type.Object(
  {
    reason: Type.Unsafe<ThrottleReason>({
      type: 'string',
      enum: [...THROTTLE_REASONS],
      description:
        "user-concurrency: the user's calls in progress fill the places campaigns may use (limit, inProgress, keptForSingleCalls); trunk-capacity: calls wait for a place on their SIP trunk (waitingForTrunk); calling-window: no contact is due and some wait for their calling window (waitingForWindow, nextOpening); dependency-unavailable: reserved for a service outage, not produced yet",
    }),
    limit: Type.Optional(Type.Integer({ description: "The user's maxConcurrentCalls (user-concurrency)" })),
    inProgress: Type.Optional(
      Type.Integer({ description: "The user's calls in progress, single and batch (user-concurrency)" }),
    ),
    keptForSingleCalls: Type.Optional(
      Type.Integer({ description: 'Places campaigns leave free for single calls (user-concurrency)' }),
    ),
    waitingForTrunk: Type.Optional(
      Type.Integer({
        description: 'Calls past their slot waiting for a place on their SIP trunk (trunk-capacity)',
      }),
    ),
    waitingForWindow: Type.Optional(
      Type.Integer({ description: 'Contacts waiting for their calling window to open (calling-window)' }),
    ),
    nextOpening: Type.Optional(
      Nullable(
        Type.String({
          format: 'date-time',
          description: 'The earliest opening among them, if known (calling-window)',
        }),
      ),
    ),
    dependency: Type.Optional(
      Type.String({ description: 'The service unavailable (dependency-unavailable)' }),
    ),
  },
  {
    description:
      'Why the batch dials below its maxCallsPerSecond; null when nothing holds it back. Derived from counts at read time (docs/decisions.md, issue 24)',
  },
);

export const BatchIdQuery = Type.Object(
  { batchId: Id('The batchId returned by batch creation') },
  { additionalProperties: false },
);

export const BatchStatisticsSchema = Type.Object({
  batchId: Type.String(),
  name: Type.String(),
  status: BatchStatusSchema,
  priority: Type.Number(),
  statistics: Type.Object({
    total: Type.Number(),
    processed: Type.Number(),
    succeeded: Type.Number(),
    failed: Type.Number(),
    pending: Type.Number(),
    percentComplete: Type.Number(),
    successRate: Type.Number({ description: 'succeeded / processed, in percent' }),
    duplicates: Type.Number({
      description: 'Contacts dropped because their number already appeared in the batch',
    }),
    cancelled: Type.Number({ description: 'Contacts removed from the queue by a cancel or a failure' }),
    withoutConsent: Type.Number({
      description: 'Contacts skipped (never dialed) because they had no consent record under requireConsent',
    }),
    suppressed: Type.Number({
      description:
        "Contacts never dialed (or not again) because their number is on the user's suppression list; final, not in processed",
    }),
    waitingForWindow: Type.Number({
      description:
        'Queued contacts outside their calling window (in their own zone), waiting for it to open; part of pending',
    }),
  }),
  performance: Type.Object({
    callsPerSecond: Type.Number({ description: 'Observed over the last 60 s' }),
    effectiveCallsPerSecond: Type.Number({
      description: 'Calls started in the last 10 s, per second: the rate the batch dials at now',
    }),
    estimatedTimeRemaining: Nullable(Type.Number({ description: 'Milliseconds' })),
    elapsedTime: Type.Number({ description: 'Milliseconds since the first call' }),
  }),
  throttle: Nullable(ThrottleSchema),
  pauseReason: Nullable(
    Type.Union([Type.Literal('operator'), Type.Literal('dependency-unavailable')], {
      description:
        "Why a paused batch is paused (null when it is not): by its operator (POST /api/v1/batch/pause), or because a dependency its agent needs (the chat model, a speech or realtime server, its SIP trunk) has an open circuit breaker; such a batch resumes on its own once the dependency answers a probe (batch.resumed). An operator's pause of such a batch makes it the operator's.",
    }),
  ),
  pausedDependency: Nullable(
    Type.String({
      description:
        "With dependency-unavailable: the dependency's breaker key, e.g. llm:http://10.0.0.5:8000/v1 or trunk:trk_…; GET /api/v1/health shows its state",
    }),
  ),
  timestamps: Type.Object({
    createdAt: DateTime,
    startedAt: Nullable(DateTime),
    completedAt: Nullable(DateTime),
    scheduledStartTime: Nullable(DateTime),
  }),
  recentCalls: Type.Array(
    Type.Object({
      id: Type.String(),
      callSid: Type.String(),
      status: CallStatusSchema,
      duration: Nullable(Type.Number()),
      createdAt: DateTime,
      phoneNumber: Type.String(),
      contactName: Type.String(),
    }),
  ),
  webhooks: Nullable(Type.Object({}, { additionalProperties: Type.String() })),
  agentId: Type.String(),
  userId: Type.String(),
  tags: Type.Array(Type.String()),
  error: Nullable(Type.Object({ code: Nullable(Type.String()), message: Type.String() })),
});

/** `limit`: a count, or 'all' / '-1' for every call of the batch. */
export const LimitParam = Type.Optional(
  Type.Union([Type.Integer({ minimum: -1, maximum: 100_000 }), Type.Literal('all')], {
    description: "Recent calls to return: default 10; 'all' or '-1' returns every call",
  }),
);

export function parseLimit(limit: number | 'all' | undefined): number | null {
  if (limit === undefined) return 10;
  if (limit === 'all' || limit === -1) return null;
  return limit;
}
