import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { CallStatusSchema, DateTime, errorResponses, Nullable } from '../../schemas/common.js';
import { BatchIdQuery } from './batch.schemas.js';

const LiveBatchStatus = Type.Object({
  batchId: Type.String(),
  calls: Type.Array(
    Type.Object({
      callId: Type.String(),
      status: CallStatusSchema,
      startTime: DateTime,
      phoneNumber: Type.String(),
      error: Nullable(Type.String()),
      duration: Nullable(Type.Number()),
      recordingUrl: Nullable(Type.String()),
    }),
  ),
});

export function registerStatusBatch(app: App, services: Pick<AppServices, 'batchReads'>): void {
  app.get(
    '/api/v1/status/batch',
    {
      schema: {
        tags: ['batches'],
        operationId: 'getLiveBatchStatus',
        summary: "Live status of a batch's calls",
        description: 'Live status of every call of a batch (memory cache, kept 30 days), newest first.',
        querystring: BatchIdQuery,
        response: { 200: LiveBatchStatus, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.batchReads.liveStatus(auth.userId, request.query.batchId);
    },
  );
}
