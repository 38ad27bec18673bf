import { Type } from '@sinclair/typebox';
import { Id } from '../../schemas/common.js';

/** Shared by the live call control routes (call.hangup.ts, call.transfer.ts, call.say.ts, call.events.get.ts). */
export const LiveCallQuery = Type.Object(
  { callId: Id('The call, which must be up with an agent talking (an AI session)') },
  { additionalProperties: false },
);

export const LiveActionReply = Type.Object({
  success: Type.Boolean({ description: 'False when the far end refused a transfer' }),
  callId: Type.String(),
  outcome: Type.Union(
    [Type.Literal('ended'), Type.Literal('transferred'), Type.Literal('refused'), Type.Literal('queued')],
    {
      description:
        'ended: hung up (endedReason operator-ended); transferred: the far end took the transfer; refused: it did not (see reason); queued: the agent says the text next',
    },
  ),
  reason: Type.Optional(
    Type.String({ description: "Why the transfer was refused, from the far end's answer" }),
  ),
});

/** The statuses every live command may answer besides 200. */
export const LIVE_ERRORS = [400, 401, 404, 409, 500, 503, 504] as const;

export const LIVE_ERRORS_TEXT =
  '404 when the call is not one of yours; 409 CALL_NOT_LIVE when no agent is talking on it now (ended, not answered yet, or a simulated call without an AI conversation); 504 LIVE_CALL_TIMEOUT when the process holding the call did not answer in time.';

/** The hang-up's own errors: it works on every ongoing call, so 409 means the call has ended. */
export const HANGUP_ERRORS_TEXT =
  '404 when the call is not one of yours; 409 CALL_NOT_LIVE when the call has ended already (or, for a moment, when no process holds it: it is being placed or is ending; try again); 504 LIVE_CALL_TIMEOUT when the process holding the call did not answer in time.';
