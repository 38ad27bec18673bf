import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../route-kit.js';
import { adminErrorResponses, Id, Nullable } from '../../schemas/common.js';

const KeyView = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Nullable(Type.String({ format: 'date-time' })),
  revokedAt: Nullable(Type.String({ format: 'date-time' })),
  lastUsedAt: Nullable(Type.String({ format: 'date-time' })),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]),
});
const admin = { tags: ['admin'], security: [{ adminToken: [] }] };

export function registerAdminKeys(app: App, services: Pick<AppServices, 'keys'>): void {
  app.post(
    '/admin/v1/keys',
    {
      schema: {
        ...admin,
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: 'Create an API key (the key is shown only in this reply).',
        body: Type.Object(
          {
            userId: Id('Owner'),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            id: Type.String(),
            key: Type.String(),
            name: Type.String(),
            expiresAt: Nullable(Type.String()),
          }),
          ...adminErrorResponses(400, 401, 404, 500),
        },
      },
    },
    async (request, reply) => {
      const { userId, name, expiresAt } = request.body;
      const created = await services.keys.create(userId, {
        ...(name ? { name } : {}),
        ...(expiresAt ? { expiresAt: new Date(expiresAt) } : {}),
      });
      return reply.status(201).header('cache-control', 'no-store').send({
        id: created.id,
        key: created.key,
        name: created.view.name,
        expiresAt: created.view.expiresAt,
      });
    },
  );

  app.get(
    '/admin/v1/keys',
    {
      schema: {
        ...admin,
        operationId: 'listApiKeys',
        summary: 'List API keys',
        description: "A user's API keys, newest first (never the secret).",
        querystring: Type.Object({ userId: Id('Owner') }, { additionalProperties: false }),
        response: { 200: Type.Object({ keys: Type.Array(KeyView) }), ...adminErrorResponses(400, 401, 500) },
      },
    },
    async (request) => ({ keys: await services.keys.list(request.query.userId) }),
  );

  app.delete(
    '/admin/v1/keys/:keyId',
    {
      schema: {
        ...admin,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'Revoke an API key: refused at once here, and within 60 s by every other process.',
        params: Type.Object({ keyId: Id('The key') }),
        response: { 200: KeyView, ...adminErrorResponses(401, 404, 500) },
      },
    },
    async (request) => services.keys.revoke(request.params.keyId),
  );
}
