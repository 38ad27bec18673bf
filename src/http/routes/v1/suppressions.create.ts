import { Type } from '@sinclair/typebox';
import { PHONE_NUMBER_DESCRIPTION } from '../../../domain/phone.js';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { SuppressionSchema } from './suppressions.schemas.js';

export const SuppressionBody = Type.Object(
  {
    phoneNumber: Type.String({
      minLength: 1,
      maxLength: 32,
      description: `The number never to dial. ${PHONE_NUMBER_DESCRIPTION}`,
    }),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description: 'Why (free text; opt-outs heard on calls say opt-out)',
      }),
    ),
  },
  { additionalProperties: false },
);

export function registerSuppressionCreate(app: App, services: Pick<AppServices, 'suppressions'>): void {
  app.post(
    '/api/v1/suppressions',
    {
      schema: {
        tags: ['suppressions'],
        operationId: 'createSuppression',
        summary: 'Suppress a number',
        description:
          "Add a number to the user's suppression list: it is refused at dial time (403 NUMBER_SUPPRESSED) and never dialed in a batch. 201 when added; 200 with the stored record, unchanged, when it was already there.",
        body: SuppressionBody,
        response: {
          201: { ...SuppressionSchema, description: 'Added' },
          200: { ...SuppressionSchema, description: 'Already on the list: the stored record, unchanged' },
          ...errorResponses(400, 401, 500),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { created, suppression } = await services.suppressions.add(auth.userId, request.body);
      return reply.status(created ? 201 : 200).send(suppression);
    },
  );
}
