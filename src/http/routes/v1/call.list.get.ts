import { Type } from '@sinclair/typebox';
import type { CallStatus } from '../../../domain/call.js';
import { PHONE_NUMBER_DESCRIPTION } from '../../../domain/phone.js';
import { requireAuth } from '../../auth.js';
import { linkNextPage } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import {
  AgentCallFieldsSchema,
  CallChannelSchema,
  CallStatusSchema,
  DateTime,
  errorResponses,
  Id,
  Nullable,
  PagedList,
} from '../../schemas/common.js';

const CallListItemSchema = Type.Object({
  callId: Type.String(),
  status: CallStatusSchema,
  phoneNumber: Type.String({ description: "E.164; 'web' for a web call" }),
  channel: CallChannelSchema,
  contactId: Type.String(),
  contactName: Type.String(),
  agentId: Type.String(),
  batchId: Nullable(Type.String({ description: 'The campaign of the call; null for a single call' })),
  endedReason: AgentCallFieldsSchema.endedReason,
  failureSource: AgentCallFieldsSchema.failureSource,
  duration: Nullable(Type.Number({ description: 'Seconds of connected time; null while ongoing' })),
  createdAt: DateTime,
  endedAt: Nullable(DateTime),
});

const CallListQuery = Type.Object(
  {
    status: Type.Optional(CallStatusSchema),
    batchId: Type.Optional(Id('Only the calls of this batch')),
    phoneNumber: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 32,
        description: `Only the calls to this number. ${PHONE_NUMBER_DESCRIPTION}`,
      }),
    ),
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only calls created at or after this instant' }),
    ),
    to: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only calls created before this instant' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(Id('X-Next-Cursor of the previous page (opaque)')),
  },
  { additionalProperties: false },
);

export function registerCallList(app: App, services: Pick<AppServices, 'callReads'>): void {
  app.get(
    '/api/v1/calls',
    {
      schema: {
        operationId: 'listCalls',
        tags: ['calls'],
        summary: 'List calls',
        description:
          "Single calls and campaign calls of the key's user, newest first, filtered by status, batch, number and creation time. Pages of `limit` calls; the next page's cursor is in the X-Next-Cursor header and its address in Link.",
        querystring: CallListQuery,
        response: {
          200: PagedList(CallListItemSchema, 'Calls, newest first'),
          ...errorResponses(400, 401, 500),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { batchId, phoneNumber, from, to, cursor } = request.query;
      const status = request.query.status as CallStatus | undefined;
      const page = await services.callReads.list(auth.userId, {
        limit: request.query.limit ?? 100,
        ...(status ? { status } : {}),
        ...(batchId ? { batchId } : {}),
        ...(phoneNumber !== undefined ? { phoneNumber } : {}),
        ...(from ? { from: new Date(from) } : {}),
        ...(to ? { to: new Date(to) } : {}),
        ...(cursor ? { cursor } : {}),
      });
      linkNextPage(reply, '/api/v1/calls', request.query, page.nextCursor);
      return page.items;
    },
  );
}
