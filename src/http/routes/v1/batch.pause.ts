import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { BatchIdQuery } from './batch.schemas.js';

const StateReply = Type.Object({
  success: Type.Boolean(),
  batchId: Type.String(),
  status: Type.Union(
    [Type.Literal('paused'), Type.Literal('scheduled'), Type.Literal('pending'), Type.Literal('processing')],
    { description: 'paused after a pause; processing, pending or scheduled after a resume' },
  ),
  message: Type.String(),
});

/** POST /api/v1/batch/pause and /resume: stop starting calls, and go on where it stopped. */
export function registerBatchPause(app: App, services: Pick<AppServices, 'batches'>): void {
  app.post(
    '/api/v1/batch/pause',
    {
      schema: {
        tags: ['batches'],
        operationId: 'pauseBatch',
        summary: 'Pause a batch',
        description:
          'Pause a batch: no new call starts and calls already up finish; 400 BATCH_NOT_PAUSABLE when it has finished or is still ingesting.',
        querystring: BatchIdQuery,
        response: { 200: StateReply, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.batches.pause(auth.userId, request.query.batchId);
    },
  );
  app.post(
    '/api/v1/batch/resume',
    {
      schema: {
        tags: ['batches'],
        operationId: 'resumeBatch',
        summary: 'Resume a batch',
        description:
          'Resume a paused batch where it stopped: processing when it had started dialing, else scheduled or pending; 400 BATCH_NOT_PAUSED otherwise.',
        querystring: BatchIdQuery,
        response: { 200: StateReply, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.batches.resume(auth.userId, request.query.batchId);
    },
  );
}
