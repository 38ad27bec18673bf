import { type Static, Type } from '@sinclair/typebox';
import { type App, type AppServices, assertOwnUser } from '../../app.js';
import { requireAuth } from '../../auth.js';
import { markDeprecated } from '../../paging.js';
import { errorResponses, Id } from '../../schemas/common.js';

export const DialBody = Type.Object(
  {
    to: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'E.164 number to dial' })),
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
        },
        { additionalProperties: false },
      ),
    ),
    statusCallBackUrl: Type.Optional(
      Type.String({
        format: 'uri',
        maxLength: 2048,
        pattern: '^https?://',
        description: 'Where the call-status callback is sent',
      }),
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

const LEGACY_PATH = '/api/private/call/dial';
const CURRENT_PATH = '/api/v1/call/dial';

export function registerCallDial(app: App, services: Pick<AppServices, 'calls'>): void {
  const handler = async (request: {
    auth: Parameters<typeof requireAuth>[0]['auth'];
    body: Static<typeof DialBody>;
  }) => {
    const auth = requireAuth(request);
    const { userId, ...input } = request.body;
    assertOwnUser(auth.userId, userId);
    return services.calls.dial(auth.userId, input);
  };
  const schema = {
    tags: ['calls'],
    body: DialBody,
    response: {
      200: DialReply,
      409: InProgressReply,
      ...errorResponses(400, 401, 402, 403, 404, 413, 429, 500, 502),
    },
  };
  app.post(CURRENT_PATH, { schema: { ...schema, summary: 'Start a single outbound call now' } }, (request) =>
    handler(request),
  );
  app.post(
    LEGACY_PATH,
    { schema: { ...schema, summary: `Deprecated: use ${CURRENT_PATH}`, deprecated: true } },
    async (request, reply) => {
      markDeprecated(reply, CURRENT_PATH);
      return handler(request);
    },
  );
}
