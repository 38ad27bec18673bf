import { Type } from '@sinclair/typebox';
import type { BatchStatus } from '../../../domain/batch.js';
import { requireAuth } from '../../auth.js';
import { linkNextPage } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import { DateTime, errorResponses, Id, PagedList } from '../../schemas/common.js';
import { BatchStatusSchema } from './batch.schemas.js';

const ListItem = Type.Object({
  batchId: Type.String(),
  name: Type.String(),
  status: BatchStatusSchema,
  total: Type.Number(),
  processed: Type.Number(),
  succeeded: Type.Number(),
  failed: Type.Number(),
  percentComplete: Type.Number(),
  createdAt: DateTime,
  agentId: Type.String(),
  priority: Type.Number(),
  tags: Type.Array(Type.String()),
});

export function registerBatchList(app: App, services: Pick<AppServices, 'batchReads'>): void {
  app.get(
    '/api/v1/batch/list',
    {
      schema: {
        tags: ['batches'],
        operationId: 'listBatches',
        summary: 'List batches',
        description:
          "The user's batches, newest first. Optional filters and pages; the next page's cursor is in the X-Next-Cursor header.",
        querystring: Type.Object(
          {
            status: Type.Optional(BatchStatusSchema),
            tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            cursor: Type.Optional(Id('batchId of the last item of the previous page')),
          },
          { additionalProperties: false },
        ),
        response: { 200: PagedList(ListItem, 'Batches, newest first'), ...errorResponses(400, 401, 500) },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { tag, cursor } = request.query;
      const status = request.query.status as BatchStatus | undefined;
      const page = await services.batchReads.list(auth.userId, {
        limit: request.query.limit ?? 100,
        ...(status ? { status } : {}),
        ...(tag ? { tag } : {}),
        ...(cursor ? { cursor } : {}),
      });
      linkNextPage(reply, '/api/v1/batch/list', request.query, page.nextCursor);
      return page.items;
    },
  );
}
