import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { BatchIdQuery } from './batch.schemas.js';

const CancelReply = Type.Object({
  success: Type.Boolean(),
  batchId: Type.String(),
  status: Type.Literal('cancelled'),
  cancelledJobs: Type.Number({ description: 'Contacts removed from the queue' }),
  message: Type.String(),
});

export function registerBatchCancel(app: App, services: Pick<AppServices, 'batches'>): void {
  app.post(
    '/api/v1/batch/cancel',
    {
      schema: {
        tags: ['batches'],
        operationId: 'cancelBatch',
        summary: 'Cancel a batch',
        description: 'Cancel a batch that has not finished; calls already up finish and are recorded.',
        querystring: BatchIdQuery,
        response: { 200: CancelReply, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.batches.cancel(auth.userId, request.query.batchId);
    },
  );
}
