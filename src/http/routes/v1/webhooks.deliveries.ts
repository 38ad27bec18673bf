import { Type } from '@sinclair/typebox';
import { WEBHOOK_EVENTS, type WebhookDeliveryStatus, type WebhookEvent } from '../../../domain/webhooks.js';
import { requireAuth } from '../../auth.js';
import { linkNextPage } from '../../paging.js';
import type { App, AppServices } from '../../route-kit.js';
import { DateTime, errorResponses, Id, Nullable, PagedList } from '../../schemas/common.js';

const DeliveryStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
]);

const Delivery = Type.Object({
  id: Type.String({ description: 'Also the webhook-id header: the same on every attempt and replay' }),
  event: Type.Unsafe<WebhookEvent>(Type.String({ enum: [...WEBHOOK_EVENTS] })),
  url: Type.String(),
  status: DeliveryStatus,
  attempts: Type.Integer({ description: 'Attempts made so far' }),
  lastStatus: Nullable(Type.Integer({ description: "The receiver's last HTTP status" })),
  lastError: Nullable(Type.String()),
  batchId: Nullable(Type.String()),
  callId: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
  deliveredAt: Nullable(DateTime),
  nextAttemptAt: Nullable({ ...DateTime, description: 'When a pending delivery is next tried' }),
});

export function registerWebhookDeliveries(app: App, services: Pick<AppServices, 'webhooks'>): void {
  app.get(
    '/api/v1/webhooks/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: 'List webhook deliveries',
        description:
          "The user's webhook deliveries, newest first: event, URL, attempts, last status and error. The next page's cursor is in the X-Next-Cursor header.",
        querystring: Type.Object(
          {
            batchId: Type.Optional(Id('Only deliveries of this batch')),
            callId: Type.Optional(Id('Only deliveries of this call')),
            status: Type.Optional(DeliveryStatus),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            cursor: Type.Optional(Id('id of the last item of the previous page')),
          },
          { additionalProperties: false },
        ),
        response: { 200: PagedList(Delivery, 'Deliveries, newest first'), ...errorResponses(400, 401, 500) },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { batchId, callId, cursor } = request.query;
      const status = request.query.status as WebhookDeliveryStatus | undefined;
      const page = await services.webhooks.list(auth.userId, {
        limit: request.query.limit ?? 100,
        ...(batchId ? { batchId } : {}),
        ...(callId ? { callId } : {}),
        ...(status ? { status } : {}),
        ...(cursor ? { cursor } : {}),
      });
      linkNextPage(reply, '/api/v1/webhooks/deliveries', request.query, page.nextCursor);
      return page.items;
    },
  );

  app.post(
    '/api/v1/webhooks/deliveries/:deliveryId/retry',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'retryWebhookDelivery',
        summary: 'Retry a webhook delivery',
        description:
          'Send a delivery again now (a failed one, or one already delivered), with a fresh retry schedule and the same webhook-id.',
        params: Type.Object({ deliveryId: Id('The delivery to send again') }),
        response: { 202: Delivery, ...errorResponses(401, 404, 409, 500) },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const delivery = await services.webhooks.retry(auth.userId, request.params.deliveryId);
      return reply.status(202).send(delivery);
    },
  );
}
