import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../../domain/errors.js';
import { requireAuth } from '../../auth.js';
import { legacySchema, markDeprecated } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses, Id } from '../../schemas/common.js';
import { BatchStatisticsSchema, LimitParam, parseLimit } from './batch.schemas.js';

/**
 * Sends check-status as the snapshot's JSON text, serialised once per snapshot rather than once
 * per request (the schema still documents it; BatchStatistics has exactly its fields).
 */
async function sendJson(reply: FastifyReply, json: Promise<string>): Promise<FastifyReply> {
  return reply.type('application/json; charset=utf-8').send(await json);
}

export function registerBatchCheckStatus(app: App, services: Pick<AppServices, 'batchReads'>): void {
  const schema = {
    tags: ['batches'],
    operationId: 'getBatchStatus',
    summary: 'Batch statistics',
    description: "A batch's statistics and its most recent calls, from persistent storage.",
    querystring: Type.Object(
      { batchId: Id('The batch'), limit: LimitParam },
      { additionalProperties: false },
    ),
    response: { 200: BatchStatisticsSchema, ...errorResponses(400, 401, 404, 500) },
  };
  app.get('/api/v1/batch/check-status', { schema }, async (request, reply) => {
    const auth = requireAuth(request);
    return sendJson(
      reply,
      services.batchReads.checkStatusJson(
        auth.userId,
        request.query.batchId,
        parseLimit(request.query.limit),
      ),
    );
  });
  // links.status of the batch creation reply: the same view at a stable address.
  app.get(
    '/api/v1/batch/:batchId/status',
    {
      schema: {
        tags: ['batches'],
        operationId: 'getBatchStatusById',
        summary: 'Batch statistics by path',
        description:
          "The same statistics as /api/v1/batch/check-status, at the address a batch's `links.status` gives.",
        params: Type.Object({ batchId: Id('The batch') }),
        querystring: Type.Object({ limit: LimitParam }, { additionalProperties: false }),
        response: schema.response,
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      if (!request.params.batchId) throw new AppError('MISSING_PARAMETER');
      return sendJson(
        reply,
        services.batchReads.checkStatusJson(
          auth.userId,
          request.params.batchId,
          parseLimit(request.query.limit),
        ),
      );
    },
  );
  // The initial release read batch statistics here; kept, marked deprecated.
  app.get(
    '/api/v1/batch',
    {
      schema: legacySchema(schema, {
        operationId: 'getBatchStatusLegacy',
        summary: 'Batch statistics (deprecated)',
        successor: '/api/v1/batch/check-status',
      }),
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      markDeprecated(reply, '/api/v1/batch/check-status');
      return sendJson(
        reply,
        services.batchReads.checkStatusJson(
          auth.userId,
          request.query.batchId,
          parseLimit(request.query.limit),
        ),
      );
    },
  );
}
