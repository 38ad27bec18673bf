import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../route-kit.js';
import {
  AgentSchema,
  adminErrorResponses,
  BasicDetailsInputSchema,
  Id,
  MetricConfigSchema,
  Nullable,
} from '../../schemas/common.js';

const AdminAgent = Type.Composite([AgentSchema, Type.Object({ userId: Type.String() })]);
const admin = { tags: ['admin'], security: [{ adminToken: [] }] };

const AgentFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  type: Type.Union([Type.Literal('OUTBOUND'), Type.Literal('INBOUND')]),
  isActive: Type.Boolean(),
  basicDetails: BasicDetailsInputSchema,
  metricConfig: MetricConfigSchema,
  sipTrunkId: Nullable(Type.String({ minLength: 1, maxLength: 64 })),
};

export function registerAdminAgents(app: App, services: Pick<AppServices, 'agents'>): void {
  app.post(
    '/admin/v1/agents',
    {
      schema: {
        ...admin,
        operationId: 'createAgent',
        summary: 'Create an agent',
        description: 'Creates an agent for a user: its voice, its AI settings and its custom metrics.',
        body: Type.Object(
          {
            userId: Id('Owner'),
            name: AgentFields.name,
            type: Type.Optional(AgentFields.type),
            isActive: Type.Optional(AgentFields.isActive),
            basicDetails: Type.Optional(AgentFields.basicDetails),
            metricConfig: Type.Optional(AgentFields.metricConfig),
            sipTrunkId: Type.Optional(AgentFields.sipTrunkId),
          },
          { additionalProperties: false },
        ),
        response: { 201: AdminAgent, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request, reply) => {
      const { userId, ...input } = request.body;
      return reply.status(201).send(await services.agents.create(userId, input));
    },
  );

  app.patch(
    '/admin/v1/agents/:agentId',
    {
      schema: {
        ...admin,
        operationId: 'updateAgent',
        summary: 'Change an agent',
        description: 'Change an agent (deactivate with isActive: false).',
        params: Type.Object({ agentId: Id('The agent') }),
        body: Type.Partial(Type.Object(AgentFields), { additionalProperties: false, minProperties: 1 }),
        response: { 200: AdminAgent, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => services.agents.update(request.params.agentId, request.body),
  );

  app.get(
    '/admin/v1/agents/:agentId',
    {
      schema: {
        ...admin,
        operationId: 'getAgentById',
        summary: 'Read an agent (admin)',
        description: 'One agent of any user, with its AI settings and its owner.',
        params: Type.Object({ agentId: Id('The agent') }),
        response: { 200: AdminAgent, ...adminErrorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => services.agents.get(request.params.agentId),
  );

  app.get(
    '/admin/v1/agents',
    {
      schema: {
        ...admin,
        operationId: 'listAgents',
        summary: 'List agents',
        description: "A user's agents, newest first.",
        querystring: Type.Object({ userId: Id('Owner') }, { additionalProperties: false }),
        response: {
          200: Type.Object({ agents: Type.Array(AdminAgent) }),
          ...adminErrorResponses(400, 401, 500),
        },
      },
    },
    async (request) => ({ agents: await services.agents.list(request.query.userId) }),
  );
}
