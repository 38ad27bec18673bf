import { Type } from '@sinclair/typebox';
import { BATCH_STATUSES, type BatchStatus } from '../../../domain/batch.js';
import { CallStatusSchema, DateTime, Id, Nullable } from '../../schemas/common.js';

export const BatchStatusSchema = Type.Unsafe<BatchStatus>({ type: 'string', enum: [...BATCH_STATUSES] });

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
    estimatedTimeRemaining: Nullable(Type.Number({ description: 'Milliseconds' })),
    elapsedTime: Type.Number({ description: 'Milliseconds since the first call' }),
  }),
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
