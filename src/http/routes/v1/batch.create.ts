import { type Static, Type } from '@sinclair/typebox';
import { type App, type AppServices, assertOwnUser } from '../../app.js';
import { requireAuth } from '../../auth.js';
import { errorResponses, Id } from '../../schemas/common.js';

/** A 100,000-contact body is about 16 MB; 32 MB leaves room for long names and metadata. */
export const BATCH_BODY_LIMIT = 32 * 1024 * 1024;

const WebhookUrl = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 });

export const ContactSchema = Type.Object(
  {
    id: Type.Optional(Id('An existing contact of yours')),
    phoneNumber: Type.String({
      minLength: 10,
      maxLength: 16,
      pattern: '^\\+[1-9][0-9]{8,14}$',
      description: 'E.164, at least 10 characters',
    }),
    name: Type.Optional(Type.String({ maxLength: 200, description: "Defaults to 'Unknown'" })),
    email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
    company: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: false },
);

export const BatchBody = Type.Object(
  {
    agentId: Id('Agent used for the whole batch'),
    userId: Id('User owning the agent; must be the API key’s user'),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Defaults to 'Unknown'" })),
    contacts: Type.Array(ContactSchema, { minItems: 1, maxItems: 100_000 }),
    options: Type.Optional(
      Type.Object(
        {
          priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, default: 5 })),
          scheduledStartTime: Type.Optional(
            Type.String({
              maxLength: 64,
              description: 'ISO 8601; without an offset it is read in `timezone`',
            }),
          ),
          timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC' })),
          maxCallsPerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, default: 10 })),
          retryStrategy: Type.Optional(
            Type.Object(
              {
                maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3 })),
                noAnswerDelay: Type.Optional(
                  Type.Integer({ minimum: 0, maximum: 604_800_000, default: 3_600_000 }),
                ),
                busyDelay: Type.Optional(
                  Type.Integer({ minimum: 0, maximum: 604_800_000, default: 300_000 }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
          webhooks: Type.Optional(
            Type.Object(
              {
                onBatchComplete: Type.Optional(WebhookUrl),
                onCallComplete: Type.Optional(WebhookUrl),
                onBatchFailed: Type.Optional(WebhookUrl),
              },
              { additionalProperties: false },
            ),
          ),
          tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const Accepted = Type.Object({
  success: Type.Boolean(),
  batchId: Type.String(),
  status: Type.String({ description: 'ingesting on acceptance' }),
  message: Type.String(),
  links: Type.Object({ status: Type.String(), dashboard: Type.String() }),
});

export function registerBatchCreate(app: App, services: Pick<AppServices, 'batches'>): void {
  // The app's JSON parser keeps the body text it parsed (request.rawBody): it is stored as the
  // batch's durable record, so the 16 MB is parsed once and never serialised again.
  app.post(
    '/api/v1/batch',
    {
      bodyLimit: BATCH_BODY_LIMIT,
      schema: {
        tags: ['batches'],
        summary: 'Submit a batch of up to 100,000 contacts; ingested and dialed in the background',
        body: BatchBody,
        response: { 202: Accepted, ...errorResponses(400, 401, 402, 403, 404, 413, 500) },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof BatchBody>;
      assertOwnUser(auth.userId, body.userId);
      const accepted = await services.batches.accept(
        auth.userId,
        body,
        request.rawBody ?? JSON.stringify(body),
      );
      return reply.status(202).send(accepted);
    },
  );
}
