import { type Static, Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { LIVE_ERRORS, LIVE_ERRORS_TEXT, LiveActionReply, LiveCallQuery } from './call.live.schemas.js';

const SayBody = Type.Object(
  {
    text: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'What the agent says next, word for word',
    }),
  },
  { additionalProperties: false },
);

/** POST /api/v1/call/say: an operator gives the agent its next line. */
export function registerCallSay(app: App, services: Pick<AppServices, 'live'>): void {
  app.post(
    '/api/v1/call/say',
    {
      schema: {
        operationId: 'sayOnCall',
        tags: ['calls'],
        summary: 'Make the agent say a line on a live call',
        description: `The agent says \`text\` next: at its next turn boundary, never over the callee (after the reply it is giving, or once the callee stops speaking). The line is in the call's transcript as the agent's, and in the model's history. 200 with outcome queued once the process holding the call has it. ${LIVE_ERRORS_TEXT}`,
        querystring: LiveCallQuery,
        body: SayBody,
        response: { 200: LiveActionReply, ...errorResponses(...LIVE_ERRORS) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof SayBody>;
      return services.live.say(auth.userId, request.query.callId, body.text);
    },
  );
}
