import { Type } from '@sinclair/typebox';
import { linkNextPage } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import { adminErrorResponses, Id, Nullable, PagingHeaders } from '../../schemas/common.js';

const User = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Nullable(Type.String()),
  availableMinutes: Type.Integer(),
  maxConcurrentCalls: Type.Integer({
    description: 'Most calls (single and batch together) the user may have in progress at once',
  }),
  defaultCountry: Nullable(
    Type.String({
      description:
        "The country (ISO 3166-1 alpha-2) this user's numbers written without + are read in; null: the server's OUTDIAL_DEFAULT_COUNTRY",
    }),
  ),
});

const DefaultCountry = Nullable(
  Type.String({
    minLength: 2,
    maxLength: 2,
    description:
      "ISO 3166-1 alpha-2 country (e.g. US, GB, DE) in which the user's numbers written without + are read, by the API, the CLI and the CSV import; null clears it (the server's OUTDIAL_DEFAULT_COUNTRY then applies)",
  }),
);

const MaxConcurrentCalls = Type.Integer({
  minimum: 1,
  maximum: 100_000,
  description:
    'Most calls in progress at once (default 200): a single dial beyond it answers 429 CONCURRENCY_LIMIT; campaigns fill all but one place (kept for single calls) and wait for a free one',
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
        operationId: 'createUser',
        summary: 'Create a user',
        description:
          'Creates a user with a name, an optional email, call minutes and a concurrent-call limit.',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
            minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
            maxConcurrentCalls: Type.Optional(MaxConcurrentCalls),
            defaultCountry: Type.Optional(DefaultCountry),
          },
          { additionalProperties: false },
        ),
        response: { 201: User, ...adminErrorResponses(400, 401, 500) },
      },
    },
    async (request, reply) => reply.status(201).send(await services.users.create(request.body)),
  );

  app.get(
    '/admin/v1/users',
    {
      schema: {
        ...admin,
        operationId: 'listUsers',
        summary: 'List users',
        description:
          "Every user of the service, newest first, in pages: the next page's cursor is in the x-next-cursor header and its address in Link.",
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            cursor: Type.Optional(
              Type.String({
                // A user id (src/domain/ids.ts): anything else cannot come from a previous page.
                pattern: '^usr_[0-9a-z]{26}$',
                description: 'x-next-cursor of the previous page (the id of its last user)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ users: Type.Array(User) }, { headers: PagingHeaders }),
          ...adminErrorResponses(400, 401, 500),
        },
      },
    },
    async (request, reply) => {
      const { cursor } = request.query;
      const page = await services.users.list({
        limit: request.query.limit ?? 100,
        ...(cursor ? { cursor } : {}),
      });
      linkNextPage(reply, '/admin/v1/users', request.query, page.nextCursor);
      return { users: page.items };
    },
  );

  app.get(
    '/admin/v1/users/:userId',
    {
      schema: {
        ...admin,
        operationId: 'getUser',
        summary: 'Read a user',
        description: 'A user with their minutes and concurrent-call limit.',
        params: UserParams,
        response: { 200: User, ...adminErrorResponses(401, 404) },
      },
    },
    async (request) => services.users.get(request.params.userId),
  );

  app.patch(
    '/admin/v1/users/:userId',
    {
      schema: {
        ...admin,
        operationId: 'updateUser',
        summary: 'Change a user',
        description: 'Change a user (the fields given; minutes change through /credits).',
        params: UserParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
            maxConcurrentCalls: Type.Optional(MaxConcurrentCalls),
            defaultCountry: Type.Optional(DefaultCountry),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: User, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => services.users.update(request.params.userId, request.body),
  );

  app.post(
    '/admin/v1/users/:userId/credits',
    {
      schema: {
        ...admin,
        operationId: 'addUserCredits',
        summary: 'Add call minutes',
        description: 'Add call minutes (a negative number takes them back).',
        params: UserParams,
        body: Type.Object(
          { minutes: Type.Integer({ minimum: -100_000_000, maximum: 100_000_000, not: { const: 0 } }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ availableMinutes: Type.Integer() }),
          ...adminErrorResponses(400, 401, 404, 500),
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
        operationId: 'getWebhookSecret',
        summary: 'Read the webhook secret',
        description: "The user's webhook signing secret (`whsec_...`), which signs every delivery to them.",
        params: UserParams,
        response: { 200: WebhookSecret, ...adminErrorResponses(401, 404, 500) },
      },
    },
    async (request) => services.users.webhookSecret(request.params.userId),
  );

  app.post(
    '/admin/v1/users/:userId/webhook-secret/rotate',
    {
      schema: {
        ...admin,
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the webhook secret',
        description: 'Rotate the webhook signing secret (the old one keeps signing for 24 hours).',
        params: UserParams,
        response: { 200: WebhookSecret, ...adminErrorResponses(401, 404, 500) },
      },
    },
    async (request) => services.users.rotateWebhookSecret(request.params.userId),
  );
}
