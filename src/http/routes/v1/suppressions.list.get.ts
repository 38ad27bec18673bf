import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import { linkNextPage } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses, PagedList } from '../../schemas/common.js';
import { SuppressionSchema } from './suppressions.schemas.js';

export function registerSuppressionList(app: App, services: Pick<AppServices, 'suppressions'>): void {
  app.get(
    '/api/v1/suppressions',
    {
      schema: {
        tags: ['suppressions'],
        operationId: 'listSuppressions',
        summary: 'List suppressed numbers',
        description:
          "The user's suppression list, newest first, in pages; the next page's cursor is in the X-Next-Cursor header.",
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            cursor: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 100,
                description: 'X-Next-Cursor of the previous page',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: PagedList(SuppressionSchema, 'Suppressed numbers, newest first'),
          ...errorResponses(400, 401, 500),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { cursor } = request.query;
      const page = await services.suppressions.list(auth.userId, {
        limit: request.query.limit ?? 100,
        ...(cursor ? { cursor } : {}),
      });
      linkNextPage(reply, '/api/v1/suppressions', request.query, page.nextCursor);
      return page.items;
    },
  );
}
