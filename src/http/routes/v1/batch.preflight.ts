import { type Static, Type } from '@sinclair/typebox';
import type { ContactProblem, PreflightInput } from '../../../services/preflight.js';
import { requireAuth } from '../../auth.js';
import { type ErrorBody, errorBody, fieldErrorsOf } from '../../errors.js';
import { type App, type AppServices, assertOwnUser } from '../../route-kit.js';
import { errorResponses, Nullable } from '../../schemas/common.js';
import { BATCH_BODY_LIMIT, BatchBody, ContactSchema } from './batch.create.js';

/**
 * A batch body whose contacts are looked at one by one: a contact POST /api/v1/batch would refuse
 * is listed in `invalid` rather than failing the request. Everything else keeps its schema, so a
 * body that is not a batch at all is still a 400.
 */
const PreflightBody = Type.Object(
  {
    ...BatchBody.properties,
    contacts: Type.Array(Type.Unknown({ description: 'A contact as POST /api/v1/batch takes it' }), {
      maxItems: 100_000,
    }),
  },
  { additionalProperties: false },
);

const Report = Type.Object({
  total: Type.Integer({ description: 'Contacts in the body' }),
  valid: Type.Integer({ description: 'Contacts POST /api/v1/batch would take' }),
  invalid: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'Position in `contacts`, from 0' }),
      phoneNumber: Nullable(Type.String()),
      reason: Type.String({ description: 'The field and what is wrong with it, as a 400 names it' }),
    }),
  ),
  duplicates: Type.Integer({ description: 'Valid contacts repeating an earlier phone number: dialed once' }),
  suppressed: Type.Integer({ description: 'Distinct valid numbers on your suppression list: never dialed' }),
  outsideWindowNow: Type.Integer({
    description: 'Contacts (not suppressed nor skipped) whose calling window is closed now in their own zone',
  }),
  withoutConsent: Type.Integer({
    description: 'Contacts without a consent record under requireConsent: skipped; 0 without requireConsent',
  }),
  estimatedMinutes: Type.Number({
    description: 'Minutes the acceptance check asks for (distinct valid contacts)',
  }),
  availableMinutes: Type.Number(),
  wouldBeAccepted: Type.Boolean({
    description: 'Whether POST /api/v1/batch with this body would answer 202 now',
  }),
  refusal: Nullable(
    Type.Object(
      {
        status: Type.Integer({ description: 'The HTTP status POST /api/v1/batch would answer' }),
        error: Type.String(),
        code: Type.Optional(Type.String()),
        message: Type.Optional(Type.String()),
        details: Type.Optional(Type.Object({}, { additionalProperties: true })),
      },
      {
        description:
          "What POST /api/v1/batch would answer instead of 202 (the spec's error body); null when accepted",
      },
    ),
  ),
});

/** The preflight's answer as a client receives it. */
export type PreflightReply = Static<typeof Report>;

export function registerBatchPreflight(app: App, services: Pick<AppServices, 'preflight'>): void {
  app.post(
    '/api/v1/batch/preflight',
    {
      bodyLimit: BATCH_BODY_LIMIT,
      schema: {
        tags: ['batches'],
        operationId: 'preflightBatch',
        summary: 'Check a batch before submitting it',
        description:
          'Check a batch body without submitting it: invalid, duplicate, suppressed, out-of-window and unconsented contacts, the minutes, and whether it would be accepted.',
        body: PreflightBody,
        response: { 200: Report, ...errorResponses(400, 401, 403, 413, 500) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      const body = request.body as Static<typeof PreflightBody>;
      assertOwnUser(auth.userId, body.userId);
      // The same compiler (and so the same formats and limits) that checks POST /api/v1/batch's body.
      const validate = request.compileValidationSchema(ContactSchema, 'body');
      const checkContact = (contact: unknown): ContactProblem[] | null => {
        if (validate(contact)) return null;
        return Object.entries(fieldErrorsOf(validate.errors ?? [])).map(([field, messages]) => ({
          field: field === '(body)' ? '' : field,
          message: messages.join(', '),
        }));
      };
      const report = await services.preflight.run(auth.userId, body as PreflightInput, checkContact);
      // A refusal here is one of INVALID_REQUEST, AGENT_NOT_FOUND, INSUFFICIENT_CREDITS: the spec's body.
      const refusal = report.refusal ? errorBody(report.refusal) : null;
      return {
        ...report,
        refusal: refusal ? { status: refusal.status, ...(refusal.body as ErrorBody) } : null,
      };
    },
  );
}
