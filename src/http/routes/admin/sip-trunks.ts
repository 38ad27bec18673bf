import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../route-kit.js';
import { adminErrorResponses, DateTime, Id, Nullable } from '../../schemas/common.js';

const admin = { tags: ['admin'], security: [{ adminToken: [] }] };

const Trunk = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  transport: Type.Literal('udp'),
  username: Nullable(Type.String()),
  hasPassword: Type.Boolean({ description: 'The password itself is never returned' }),
  fromNumber: Type.String(),
  maxCallsPerSecond: Nullable(Type.Integer()),
  maxConcurrentCalls: Nullable(Type.Integer()),
  createdAt: DateTime,
  updatedAt: DateTime,
});

const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  host: Type.String({ minLength: 1, maxLength: 253, description: 'Host name or IP of the carrier or PBX' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, default: 5060 }),
  transport: Type.Literal('udp', { description: 'udp (tcp and tls later)' }),
  username: Nullable(Type.String({ minLength: 1, maxLength: 200 })),
  password: Nullable(
    Type.String({ minLength: 1, maxLength: 200, description: 'Stored encrypted; never returned' }),
  ),
  fromNumber: Type.String({ minLength: 1, maxLength: 20, description: 'E.164 caller number' }),
  maxCallsPerSecond: Nullable(Type.Integer({ minimum: 1, maximum: 1000 })),
  maxConcurrentCalls: Nullable(Type.Integer({ minimum: 1, maximum: 100_000 })),
};

export function registerAdminSipTrunks(app: App, services: Pick<AppServices, 'sipTrunks'>): void {
  app.post(
    '/admin/v1/sip-trunks',
    {
      schema: {
        ...admin,
        operationId: 'createSipTrunk',
        summary: 'Add a SIP trunk',
        description: 'Add a SIP trunk for a user (agents name it in sipTrunkId).',
        body: Type.Object(
          {
            userId: Id('Owner'),
            name: Fields.name,
            host: Fields.host,
            port: Type.Optional(Fields.port),
            transport: Type.Optional(Fields.transport),
            username: Type.Optional(Fields.username),
            password: Type.Optional(Fields.password),
            fromNumber: Fields.fromNumber,
            maxCallsPerSecond: Type.Optional(Fields.maxCallsPerSecond),
            maxConcurrentCalls: Type.Optional(Fields.maxConcurrentCalls),
          },
          { additionalProperties: false },
        ),
        response: { 201: Trunk, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request, reply) => {
      const { userId, ...input } = request.body;
      return reply.status(201).send(await services.sipTrunks.create(userId, input));
    },
  );
  app.get(
    '/admin/v1/sip-trunks',
    {
      schema: {
        ...admin,
        operationId: 'listSipTrunks',
        summary: 'List SIP trunks',
        description: "A user's SIP trunks, newest first.",
        querystring: Type.Object({ userId: Id('Owner') }, { additionalProperties: false }),
        response: {
          200: Type.Object({ sipTrunks: Type.Array(Trunk) }),
          ...adminErrorResponses(400, 401, 500),
        },
      },
    },
    async (request) => ({ sipTrunks: await services.sipTrunks.list(request.query.userId) }),
  );
  app.get(
    '/admin/v1/sip-trunks/:trunkId',
    {
      schema: {
        ...admin,
        operationId: 'getSipTrunk',
        summary: 'Read a SIP trunk',
        description: 'One SIP trunk, its password never shown (hasPassword says whether it has one).',
        params: Type.Object({ trunkId: Id('The trunk') }),
        response: { 200: Trunk, ...adminErrorResponses(401, 404, 500) },
      },
    },
    async (request) => services.sipTrunks.get(request.params.trunkId),
  );
  app.patch(
    '/admin/v1/sip-trunks/:trunkId',
    {
      schema: {
        ...admin,
        operationId: 'updateSipTrunk',
        summary: 'Change a SIP trunk',
        description: 'Change a SIP trunk (null clears username, password or a cap).',
        params: Type.Object({ trunkId: Id('The trunk') }),
        body: Type.Partial(Type.Object(Fields), { additionalProperties: false, minProperties: 1 }),
        response: { 200: Trunk, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => services.sipTrunks.update(request.params.trunkId, request.body),
  );
  app.delete(
    '/admin/v1/sip-trunks/:trunkId',
    {
      schema: {
        ...admin,
        operationId: 'deleteSipTrunk',
        summary: 'Delete a SIP trunk',
        description: 'Delete a SIP trunk no agent uses (409 otherwise).',
        params: Type.Object({ trunkId: Id('The trunk') }),
        response: { 204: Type.Null(), ...adminErrorResponses(401, 404, 409, 500) },
      },
    },
    async (request, reply) => {
      await services.sipTrunks.delete(request.params.trunkId);
      return reply.status(204).send(null);
    },
  );
}
