import { Type } from '@sinclair/typebox';
import { PHONE_NUMBER_DESCRIPTION } from '../../../domain/phone.js';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';

export function registerSuppressionDelete(app: App, services: Pick<AppServices, 'suppressions'>): void {
  app.delete(
    '/api/v1/suppressions/:phoneNumber',
    {
      schema: {
        tags: ['suppressions'],
        operationId: 'deleteSuppression',
        summary: 'Unsuppress a number',
        description:
          "Remove a number from the user's suppression list (write + as %2B); contacts already marked suppressed in a batch stay so.",
        params: Type.Object({
          phoneNumber: Type.String({
            minLength: 1,
            maxLength: 32,
            description: `URL-encoded (%2B for +). ${PHONE_NUMBER_DESCRIPTION}`,
          }),
        }),
        response: { 204: Type.Null(), ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      await services.suppressions.remove(auth.userId, request.params.phoneNumber);
      return reply.status(204).send(null);
    },
  );
}
