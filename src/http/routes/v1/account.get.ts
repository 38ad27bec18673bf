import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';

const Account = Type.Object({
  userId: Type.String(),
  availableMinutes: Type.Number({ description: 'The balance of call minutes' }),
  reservedMinutes: Type.Number({
    description: 'Minutes held back for the calls in progress (one each); charged when they end',
  }),
  maxConcurrentCalls: Type.Integer({ description: 'Most calls (single and batch) in progress at once' }),
  activeCalls: Type.Integer({ description: 'Calls in progress now, single and batch' }),
});

export function registerAccountGet(app: App, services: Pick<AppServices, 'users'>): void {
  app.get(
    '/api/v1/account',
    {
      schema: {
        tags: ['account'],
        operationId: 'getAccount',
        summary: 'Read the account',
        description:
          "The API key's user: minutes available and reserved, the concurrent-call limit and the calls up now.",
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: Account, ...errorResponses(401, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.users.account(auth.userId);
    },
  );
}
