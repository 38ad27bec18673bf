import { Type } from '@sinclair/typebox';
import { requireAuth } from '../../auth.js';
import type { App, AppServices } from '../../route-kit.js';
import {
  AgentCallFieldsSchema,
  CallChannelSchema,
  CallStatusSchema,
  DateTime,
  errorResponses,
  Id,
  Nullable,
  TranscriptEntrySchema,
} from '../../schemas/common.js';

const PersistentCallStatus = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    id: Type.String(),
    status: CallStatusSchema,
    direction: Type.String({ description: 'OUTBOUND' }),
    duration: Nullable(Type.Number({ description: 'Seconds of connected time; null while ongoing' })),
    createdAt: DateTime,
    endedAt: Nullable(DateTime),
    contact: Type.Object({ name: Type.String(), phoneNumber: Type.String() }),
    agent: Type.String({ description: "The agent's name" }),
    recordingUrl: Nullable(Type.String()),
    transcription: Type.Array(TranscriptEntrySchema),
    error: Nullable(Type.String()),
    batchId: Nullable(Type.String()),
    contactId: Type.String(),
    agentId: Type.String(),
    channel: CallChannelSchema,
    sipStatusCode: Nullable(
      Type.Integer({
        description:
          "The SIP status code of the carrier's final answer (200, 486, 404, ...) for a call placed through a SIP trunk; null otherwise",
      }),
    ),
    minutesCharged: Type.Integer({
      minimum: 0,
      description:
        'Minutes taken from the balance for the call: each started minute of connected time; 0 while ongoing, when nobody answered, and when the call failed on our side (failureSource service: its connected seconds are still in duration)',
    }),
    ...AgentCallFieldsSchema,
  }),
});

export function registerCallCheckStatus(app: App, services: Pick<AppServices, 'callReads'>): void {
  app.get(
    '/api/v1/call/check-status',
    {
      schema: {
        tags: ['calls'],
        operationId: 'getCallStatus',
        summary: 'Persistent call status',
        description: "A call's status, transcript and outcome from long-term storage.",
        querystring: Type.Object({ callId: Id('The call') }, { additionalProperties: false }),
        response: { 200: PersistentCallStatus, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      return {
        success: true,
        data: await services.callReads.persistentStatus(auth.userId, request.query.callId),
      };
    },
  );
}
