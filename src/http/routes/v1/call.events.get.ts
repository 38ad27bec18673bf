import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { sseSink } from '../../sse.js';
import { LiveCallQuery } from './call.live.schemas.js';

const STREAM_DESCRIPTION = `Server-Sent Events (text/event-stream) of one call, from now until it ends. Events, each a JSON \`data\` line with the call's \`callId\`:
- \`status\`: where the call stands: \`ongoing\` (placed, not answered yet, or a call with no AI conversation), \`answered\`, \`in-progress\` (the agent talks with a person: hangup, transfer and say are taken), \`voicemail\`, \`ending\` (with its \`endedReason\`). The first event is the state at the moment the stream opened.
- \`turn\`: a transcript line once it is final: \`role\` (assistant or user) and \`content\`. On opening, the lines said so far come first.
- \`tool-call\`: a tool the agent called (\`call\`: name, arguments, result, error, at, durationMs).
- \`ended\`: the call's stored final state (status, endedReason, duration, error, transcription, toolCalls); the stream then closes. A call that has already ended gets only this.
Events from the process holding the call carry an \`id\` (their number in the call). A comment line (\`: heartbeat\`) is sent every 15 s so proxies keep the stream open.`;

/** GET /api/v1/call/events: a live call's events as Server-Sent Events. */
export function registerCallEvents(app: App, services: Pick<AppServices, 'live'>): void {
  app.get(
    '/api/v1/call/events',
    {
      schema: {
        operationId: 'callEvents',
        tags: ['calls'],
        summary: "Follow a call's live events (Server-Sent Events)",
        description: `${STREAM_DESCRIPTION} 404 when the call is not one of yours.`,
        querystring: LiveCallQuery,
        response: {
          200: {
            description: 'The event stream',
            content: {
              'text/event-stream': {
                schema: Type.String({
                  description:
                    'event: <name>\\nid: <n>\\ndata: <JSON>\\n\\n, repeated; comments start with a colon',
                }),
              },
            },
          },
          ...errorResponses(400, 401, 404, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const sink = sseSink(reply.raw, () => reply.hijack());
      const stop = await services.live.follow(auth.userId, request.query.callId, sink);
      // The client went away (or the stream ended): nothing is left subscribed.
      reply.raw.on('close', stop);
      if (reply.raw.destroyed) stop();
      return reply;
    },
  );
}
