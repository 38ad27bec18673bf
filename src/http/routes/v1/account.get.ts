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
  defaultCountry: Type.String({
    description:
      "The country (ISO 3166-1 alpha-2) numbers written without + are read in: the account's own setting, else the server's OUTDIAL_DEFAULT_COUNTRY",
  }),
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
          "The API key's user: minutes available and reserved, the concurrent-call limit, the calls up now and the default country of phone numbers.",
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
