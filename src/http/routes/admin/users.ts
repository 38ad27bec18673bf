import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../app.js';
import { errorResponses, Id, Nullable } from '../../schemas/common.js';

const User = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Nullable(Type.String()),
  availableMinutes: Type.Integer(),
  maxConcurrentCalls: Type.Integer({
    description: 'Most calls (single and batch together) the user may have in progress at once',
  }),
});

const MaxConcurrentCalls = Type.Integer({
  minimum: 1,
  maximum: 100_000,
  description:
    'Most calls in progress at once (default 10): a single dial beyond it answers 429 CONCURRENCY_LIMIT, batches wait for a free place',
});

const WebhookSecret = Type.Object({
  secret: Type.String({ description: 'whsec_ followed by the base64 of 32 random bytes' }),
  previousSecret: Nullable(Type.String({ description: 'Still signing for 24 hours after a rotation' })),
  rotatedAt: Nullable(Type.String({ format: 'date-time' })),
});

const UserParams = Type.Object({ userId: Id('The user') });
const admin = { tags: ['admin'], security: [{ adminToken: [] }] };

export function registerAdminUsers(app: App, services: Pick<AppServices, 'users'>): void {
  app.post(
    '/admin/v1/users',
    {
      schema: {
        ...admin,
        summary: 'Create a user',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
            minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
            maxConcurrentCalls: Type.Optional(MaxConcurrentCalls),
          },
          { additionalProperties: false },
        ),
        response: { 201: User, ...errorResponses(400, 401, 500) },
      },
    },
    async (request, reply) => reply.status(201).send(await services.users.create(request.body)),
  );

  app.get(
    '/admin/v1/users/:userId',
    {
      schema: {
        ...admin,
        summary: 'Read a user',
        params: UserParams,
        response: { 200: User, ...errorResponses(401, 404) },
      },
    },
    async (request) => services.users.get(request.params.userId),
  );

  app.patch(
    '/admin/v1/users/:userId',
    {
      schema: {
        ...admin,
        summary: 'Change a user (the fields given; minutes change through /credits)',
        params: UserParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
            maxConcurrentCalls: Type.Optional(MaxConcurrentCalls),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: User, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => services.users.update(request.params.userId, request.body),
  );

  app.post(
    '/admin/v1/users/:userId/credits',
    {
      schema: {
        ...admin,
        summary: 'Add call minutes (a negative number takes them back)',
        params: UserParams,
        body: Type.Object(
          { minutes: Type.Integer({ minimum: -100_000_000, maximum: 100_000_000, not: { const: 0 } }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ availableMinutes: Type.Integer() }),
          ...errorResponses(400, 401, 404, 500),
        },
      },
    },
    async (request) => services.users.addCredits(request.params.userId, request.body.minutes),
  );

  app.get(
    '/admin/v1/users/:userId/webhook-secret',
    {
      schema: {
        ...admin,
        summary: "The user's webhook signing secret",
        params: UserParams,
        response: { 200: WebhookSecret, ...errorResponses(401, 404, 500) },
      },
    },
    async (request) => services.users.webhookSecret(request.params.userId),
  );

  app.post(
    '/admin/v1/users/:userId/webhook-secret/rotate',
    {
      schema: {
        ...admin,
        summary: 'Rotate the webhook signing secret (the old one keeps signing for 24 hours)',
        params: UserParams,
        response: { 200: WebhookSecret, ...errorResponses(401, 404, 500) },
      },
    },
    async (request) => services.users.rotateWebhookSecret(request.params.userId),
  );
}
