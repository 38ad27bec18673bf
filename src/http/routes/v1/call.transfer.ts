import { type Static, Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses } from '../../schemas/common.js';
import { LIVE_ERRORS, LIVE_ERRORS_TEXT, LiveActionReply, LiveCallQuery } from './call.live.schemas.js';

const TransferBody = Type.Object(
  {
    to: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'An E.164 number such as +14155550123, or a SIP URI such as sip:desk@pbx.example.com',
    }),
  },
  { additionalProperties: false },
);

/** POST /api/v1/call/transfer: an operator hands a live call to a person (a blind SIP REFER). */
export function registerCallTransfer(app: App, services: Pick<AppServices, 'live'>): void {
  app.post(
    '/api/v1/call/transfer',
    {
      schema: {
        operationId: 'transferCall',
        tags: ['calls'],
        summary: 'Transfer a live call',
        description: `Blind transfer (SIP REFER) of the call to \`to\`. Answered once the far end has: 200 with outcome transferred (the call ends with endedReason transferred), or 200 with success false, outcome refused and the far end's reason (the agent stays on the call). ${LIVE_ERRORS_TEXT}`,
        querystring: LiveCallQuery,
        body: TransferBody,
        response: { 200: LiveActionReply, ...errorResponses(...LIVE_ERRORS) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof TransferBody>;
      return services.live.transfer(auth.userId, request.query.callId, body.to);
    },
  );
}
