import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { HANGUP_ERRORS_TEXT, LIVE_ERRORS, LiveActionReply, LiveCallQuery } from './call.live.schemas.js';

/** POST /api/v1/call/hangup: an operator ends any ongoing call (endedReason operator-ended). */
export function registerCallHangup(app: App, services: Pick<AppServices, 'live'>): void {
  app.post(
    '/api/v1/call/hangup',
    {
      schema: {
        operationId: 'hangupCall',
        tags: ['calls'],
        summary: 'Hang up an ongoing call',
        description: `Ends any ongoing call of yours now, wherever it runs, with endedReason operator-ended. An answered call: the agent stops talking, the line is closed (BYE), and the call ends with its status as usual (COMPLETED), charged for the time connected. A call still ringing is cancelled (SIP CANCEL): NO_ANSWER, nothing charged. A simulated call without an AI conversation is ended the same way. Answered once the process holding the call has done it and the end is stored. ${HANGUP_ERRORS_TEXT}`,
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
