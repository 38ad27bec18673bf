import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PHONE_NUMBER_DESCRIPTION } from '../../../domain/phone.js';
import { CALL_EVENTS, type CallEvent, DEFAULT_CALL_EVENTS } from '../../../domain/webhooks.js';
import type { DialResult } from '../../../services/calls/intake.js';
import { requireAuth } from '../../auth.js';
import {
  IdempotencyHeaders,
  REPLAYED_HEADER,
  ReplayedResponseHeaders,
  withIdempotencyKey,
} from '../../idempotency.js';
import { legacySchema, markDeprecated } from '../../paging.js';
import { type App, type AppServices, assertOwnUser } from '../../route-kit.js';
import { ErrorBody, errorResponses, Id } from '../../schemas/common.js';
import { ConsentSchema } from './batch.create.js';

/** A dial `variables` name: what `{{name}}` can name, bounded (see domain/agent-call.ts). */
const VARIABLE_NAME = '^[A-Za-z_][A-Za-z0-9_.-]{0,63}$';

export const DialBody = Type.Object(
  {
    to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 32,
        description: `The number to dial. ${PHONE_NUMBER_DESCRIPTION} A number that cannot be read is a 400 naming it ("to: 555-0123 is not a valid number for US"), checked before the credit and concurrency limits.`,
      }),
    ),
    agentConfigId: Id('Agent to use'),
    userId: Type.Optional(Id('User owning the agent; when given it must be the API key’s user')),
    contactId: Type.Optional(Id('An existing contact; its number is dialed when `to` is absent')),
    callerDetails: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Type.String({ maxLength: 200 })),
          email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
          company: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
          metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
          consent: Type.Optional(ConsentSchema),
        },
        { additionalProperties: false },
      ),
    ),
    variables: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 1000 }), {
        propertyNames: { pattern: VARIABLE_NAME },
        maxProperties: 50,
        description:
          "Values for the agent's {{variables}} on this call (outdial's addition to the spec): at most 50 names (a letter or `_`, then letters, digits, `_`, `.` or `-`; 64 characters at most), each a string of at most 1000 characters. They win over the contact's fields and metadata of the same name.",
      }),
    ),
    statusCallBackUrl: Type.Optional(
      Type.String({
        format: 'uri',
        maxLength: 2048,
        pattern: '^https?://',
        description: 'Where the call-status callback is sent',
      }),
    ),
    statusCallBackEvents: Type.Optional(
      Type.Array(
        Type.Unsafe<CallEvent>(Type.String({ enum: [...CALL_EVENTS], description: 'An event of the call' })),
        {
          minItems: 1,
          uniqueItems: true,
          default: [...DEFAULT_CALL_EVENTS],
          description:
            'The events sent to statusCallBackUrl (outdial\'s addition to the spec): `call.started` when the call is dialed, `call.answered` when it is answered, `call.completed` when it ended. Default `["call.completed"]`; without statusCallBackUrl nothing is sent.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const DialReply = Type.Object({
  message: Type.String(),
  callId: Type.String(),
  contactId: Type.String(),
  status: Type.Literal('ONGOING'),
});

const InProgressReply = Type.Object(
  { message: Type.String(), callId: Type.Union([Type.String(), Type.Null()]) },
  { description: 'A call is already in progress for the contact; callId is the earlier call' },
);

/** 409 is either the spec's call-in-progress reply or the error body of IDEMPOTENCY_KEY_IN_USE. */
const ConflictReply = Type.Union([InProgressReply, Type.Ref(ErrorBody)], {
  description:
    'A call is already in progress for the contact (message and the earlier callId), or a request under the same Idempotency-Key is still running (code IDEMPOTENCY_KEY_IN_USE)',
});

/** 503: code OVERLOADED (this AI call could not be served here now), or the service is shutting down. */
const ServiceUnavailableReply = Type.Ref(ErrorBody, {
  description:
    "Code OVERLOADED: the server that would hold this AI call is at its most AI calls (OUTDIAL_MAX_AI_CALLS) or its event loop is lagging; retry after the `Retry-After` seconds (another instance behind the load balancer may have room). Code DEPENDENCY_UNAVAILABLE: a dependency the call needs (the chat model, a speech or realtime server, the agent's SIP trunk) has an open circuit breaker; `details.dependency` names it (e.g. `llm:http://10.0.0.5:8000/v1`, `trunk:trk_…`), with `kind`, `since` and `lastError`; try again once GET /api/v1/health shows it closed. Either way nothing was written, dialed or charged. Also answered, without a code's details, while the service shuts down",
  headers: {
    'Retry-After': Type.Integer({
      minimum: 1,
      description: 'Seconds to wait before dialing again (code OVERLOADED)',
    }),
  },
});

const LEGACY_PATH = '/api/private/call/dial';
const CURRENT_PATH = '/api/v1/call/dial';

export function registerCallDial(app: App, services: Pick<AppServices, 'calls' | 'idempotency'>): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const auth = requireAuth(request);
    const { userId, ...input } = request.body as Static<typeof DialBody>;
    assertOwnUser(auth.userId, userId);
    return withIdempotencyKey<DialResult>({
      request,
      reply,
      service: services.idempotency,
      userId: auth.userId,
      status: 200,
      resourceId: (result) => result.callId,
      run: (onCommit) => services.calls.dial(auth.userId, input, onCommit),
    });
  };
  const schema = {
    tags: ['calls'],
    headers: IdempotencyHeaders,
    body: DialBody,
    response: {
      200: Type.Object(DialReply.properties, {
        headers: ReplayedResponseHeaders,
        description: `The call started (or, under an Idempotency-Key already answered, the first answer again with \`${REPLAYED_HEADER}: true\`)`,
      }),
      409: ConflictReply,
      ...errorResponses(400, 401, 402, 403, 404, 413, 422, 429, 500, 502),
      403: Type.Ref(ErrorBody, {
        description:
          "Access denied (userId is not the key's user), or code NUMBER_SUPPRESSED: the number is on the user's suppression list; nothing is dialed or charged",
      }),
      503: ServiceUnavailableReply,
    },
  };
  app.post(
    CURRENT_PATH,
    {
      schema: {
        ...schema,
        operationId: 'dialCall',
        summary: 'Start a call',
        description:
          'Starts a single outbound call now with the given agent. `userId` is optional: the API key names the user.',
      },
    },
    (request, reply) => handler(request, reply),
  );
  app.post(
    LEGACY_PATH,
    {
      schema: legacySchema(schema, {
        operationId: 'dialCallLegacy',
        summary: 'Start a call (deprecated)',
        successor: CURRENT_PATH,
      }),
    },
    async (request, reply) => {
      markDeprecated(reply, CURRENT_PATH);
      return handler(request, reply);
    },
  );
}
