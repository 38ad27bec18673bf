import { Type } from '@sinclair/typebox';
import { AppError } from '../../../domain/errors.js';
import { requireAuth } from '../../auth.js';
import { type App, type AppServices, assertOwnUser } from '../../route-kit.js';
import { AgentSchema, errorResponses, Id } from '../../schemas/common.js';

export function registerAgentGet(app: App, services: Pick<AppServices, 'agents'>): void {
  app.get(
    '/api/v1/agent',
    {
      schema: {
        tags: ['agents'],
        operationId: 'getAgent',
        summary: 'Read an agent',
        description:
          "An agent's configuration, as the spec shows it. `userId` is optional: the API key names the user.",
        querystring: Type.Object(
          {
            agentId: Id('The agent'),
            userId: Type.Optional(Id('The user owning the agent; when given it must be the API key’s user')),
          },
          { additionalProperties: false },
        ),
        response: { 200: AgentSchema, ...errorResponses(400, 401, 403, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      assertOwnUser(auth.userId, request.query.userId);
      const agent = await services.agents.getForUser(auth.userId, request.query.agentId);
      if (!agent) throw new AppError('NOT_FOUND');
      return agent;
    },
  );
}
