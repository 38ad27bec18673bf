import { type Static, Type } from '@sinclair/typebox';
import { WEEKDAYS, type Weekday } from '../../../domain/batch.js';
import { CONSENT_LIMITS } from '../../../domain/consent.js';
import { PHONE_NUMBER_DESCRIPTION } from '../../../domain/phone.js';
import type { BatchAccepted } from '../../../services/batches.js';
import { requireAuth } from '../../auth.js';
import {
  IdempotencyHeaders,
  REPLAYED_HEADER,
  ReplayedResponseHeaders,
  withIdempotencyKey,
} from '../../idempotency.js';
import { type App, type AppServices, assertOwnUser } from '../../route-kit.js';
import { errorResponses, Id } from '../../schemas/common.js';

/** A 100,000-contact body is about 16 MB; 32 MB leaves room for long names and metadata. */
export const BATCH_BODY_LIMIT = 32 * 1024 * 1024;

/** A contact's consent to be called (issue 15): stored on the contact, shown in the export and on the call page. */
export const ConsentSchema = Type.Object(
  {
    source: Type.String({
      minLength: 1,
      maxLength: CONSENT_LIMITS.source,
      description: 'Where the consent was obtained: a web form, a call, a paper form...',
    }),
    obtainedAt: Type.String({
      format: 'date-time',
      maxLength: 64,
      description: 'ISO 8601 instant with an offset; not in the future (5 minutes of clock skew allowed)',
    }),
    text: Type.Optional(
      Type.String({ maxLength: CONSENT_LIMITS.text, description: 'The words the person agreed to' }),
    ),
  },
  { additionalProperties: false },
);

const WindowTime = (example: string) =>
  Type.String({
    pattern: '^([01][0-9]|2[0-4]):[0-5][0-9]$',
    description: `24-hour local time, e.g. "${example}"`,
  });

/** When contacts may be called, in each contact's own zone (issue 15). */
export const CallingWindowSchema = Type.Object(
  {
    start: WindowTime('08:00'),
    end: WindowTime('21:00'),
    days: Type.Optional(
      Type.Array(Type.Unsafe<Weekday>({ type: 'string', enum: [...WEEKDAYS] }), {
        minItems: 1,
        maxItems: 7,
        description: 'Days the window opens on, in the contact’s zone; every day when absent',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Calls start only from `start` to `end` (end after start, "24:00" allowed; no window across midnight) in each contact’s zone: its `timezone`, else its number’s zone, else the batch’s `timezone`. Contacts outside wait for the opening, retries included',
  },
);

const WebhookUrl = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 });

export const ContactSchema = Type.Object(
  {
    id: Type.Optional(Id('An existing contact of yours')),
    phoneNumber: Type.String({
      minLength: 1,
      maxLength: 32,
      description: `${PHONE_NUMBER_DESCRIPTION} A row that cannot be read refuses the request with its sentence, e.g. "contacts.12.phoneNumber: row 12: 555-0123 is not a valid number for US".`,
    }),
    name: Type.Optional(Type.String({ maxLength: 200, description: "Defaults to 'Unknown'" })),
    email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
    company: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
    consent: Type.Optional(ConsentSchema),
    timezone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          "The contact's IANA time zone (e.g. America/Chicago); the calling window is read there. Defaults to the zone of the number's country or area code, else the batch's timezone",
      }),
    ),
  },
  { additionalProperties: false },
);

export const BatchBody = Type.Object(
  {
    agentId: Id('Agent used for the whole batch'),
    userId: Type.Optional(
      Id(
        'User owning the agent; optional (the API key names the user), and when given it must be the key’s user',
      ),
    ),
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          "The campaign's name, shown on the dashboard, the CLI and every read; trimmed, and refused when blank. Defaults to 'Unknown'",
      }),
    ),
    contacts: Type.Array(ContactSchema, { minItems: 1, maxItems: 100_000 }),
    options: Type.Optional(
      Type.Object(
        {
          priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, default: 5 })),
          scheduledStartTime: Type.Optional(
            Type.String({
              maxLength: 64,
              description: 'ISO 8601; without an offset it is read in `timezone`',
            }),
          ),
          timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC' })),
          maxCallsPerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, default: 10 })),
          retryStrategy: Type.Optional(
            Type.Object(
              {
                maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3 })),
                noAnswerDelay: Type.Optional(
                  Type.Integer({ minimum: 0, maximum: 604_800_000, default: 3_600_000 }),
                ),
                busyDelay: Type.Optional(
                  Type.Integer({ minimum: 0, maximum: 604_800_000, default: 300_000 }),
                ),
                retryOnVoicemail: Type.Optional(
                  Type.Boolean({
                    default: false,
                    description:
                      "Call a contact again (after noAnswerDelay, up to maxAttempts) when its call reached voicemail. Off by default: the agent's voicemailMessage is left once, and the contact is done with the outcome VOICEMAIL (outdial's addition to the spec)",
                  }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
          webhooks: Type.Optional(
            Type.Object(
              {
                onBatchComplete: Type.Optional(WebhookUrl),
                onCallComplete: Type.Optional(WebhookUrl),
                onBatchFailed: Type.Optional(WebhookUrl),
                onBatchEvent: Type.Optional(WebhookUrl),
                onCallEvent: Type.Optional(
                  Type.String({
                    format: 'uri',
                    pattern: '^https?://',
                    maxLength: 2048,
                    description:
                      "Receives call.started (a call of the batch is dialed) and call.answered (it was answered) for every call of the batch (outdial's addition to the spec)",
                  }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
          tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 })),
          callingWindow: Type.Optional(CallingWindowSchema),
          requireConsent: Type.Optional(
            Type.Boolean({
              description:
                'Skip (never dial) contacts without a `consent` record; they are counted in statistics.withoutConsent and exported as NO_CONSENT',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const Accepted = Type.Object({
  success: Type.Boolean(),
  batchId: Type.String(),
  status: Type.String({ description: 'ingesting on acceptance' }),
  message: Type.String(),
  links: Type.Object({ status: Type.String(), dashboard: Type.String() }),
});

export function registerBatchCreate(app: App, services: Pick<AppServices, 'batches' | 'idempotency'>): void {
  // The app's JSON parser keeps the body text it parsed (request.rawBody): it is stored as the
  // batch's durable record, so the 16 MB is parsed once and never serialised again.
  app.post(
    '/api/v1/batch',
    {
      bodyLimit: BATCH_BODY_LIMIT,
      schema: {
        tags: ['batches'],
        operationId: 'createBatch',
        summary: 'Submit a batch',
        description:
          'Submits a batch of up to 100,000 contacts, ingested and dialed in the background. `userId` is optional: the API key names the user.',
        headers: IdempotencyHeaders,
        body: BatchBody,
        response: {
          202: Type.Object(Accepted.properties, {
            headers: ReplayedResponseHeaders,
            description: `Accepted (or, under an Idempotency-Key already answered, the first answer again with \`${REPLAYED_HEADER}: true\`)`,
          }),
          ...errorResponses(400, 401, 402, 403, 404, 409, 413, 422, 500),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof BatchBody>;
      assertOwnUser(auth.userId, body.userId);
      return withIdempotencyKey<BatchAccepted>({
        request,
        reply,
        service: services.idempotency,
        userId: auth.userId,
        status: 202,
        resourceId: (accepted) => accepted.batchId,
        run: (onCommit) =>
          services.batches.accept(auth.userId, body, request.rawBody ?? JSON.stringify(body), onCommit),
      });
    },
  );
}
