import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { LIVE_ERRORS, LIVE_ERRORS_TEXT, LiveActionReply, LiveCallQuery } from './call.live.schemas.js';

/** POST /api/v1/call/hangup: an operator ends a live call (endedReason operator-ended). */
export function registerCallHangup(app: App, services: Pick<AppServices, 'live'>): void {
  app.post(
    '/api/v1/call/hangup',
    {
      schema: {
        operationId: 'hangupCall',
        tags: ['calls'],
        summary: 'Hang up a live call',
        description: `Ends the call now, wherever it runs: the agent stops talking, the line is closed, and the call ends with endedReason operator-ended. Answered once the process holding the call has done it. ${LIVE_ERRORS_TEXT}`,
        querystring: LiveCallQuery,
        response: { 200: LiveActionReply, ...errorResponses(...LIVE_ERRORS) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return services.live.hangup(auth.userId, request.query.callId);
    },
  );
}
