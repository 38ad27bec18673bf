import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses, Id, LiveCallStatusSchema } from '../../schemas/common.js';

export function registerStatusCall(app: App, services: Pick<AppServices, 'callReads'>): void {
  app.get(
    '/api/v1/status/call',
    {
      schema: {
        tags: ['calls'],
        operationId: 'getLiveCallStatus',
        summary: 'Live call status',
        description:
          'Live call status (memory cache, kept 30 days; the database answers when the entry is gone).',
        querystring: Type.Object(
          { callId: Id('The callId returned by the dial endpoint') },
          { additionalProperties: false },
        ),
        response: { 200: LiveCallStatusSchema, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.callReads.liveStatus(auth.userId, request.query.callId);
    },
  );
}
