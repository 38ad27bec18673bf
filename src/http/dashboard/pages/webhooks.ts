import { AppError } from '../../../domain/errors.js';
import type { WebhookDeliveryStatus } from '../../../domain/webhooks.js';
import type { DeliveryView, WebhookService } from '../../../services/webhooks.js';
import type { App } from '../../route-kit.js';
import { formatDate, type Html, html, layout } from '../html.js';
import { type DashboardServices, type PageGuard, page } from '../page-kit.js';

/** Deliveries on one page of the log. */
export const DELIVERIES_PAGE_SIZE = 50;

/** The statuses the filter offers, with the words the page uses for them. */
const STATUS_LABELS: Record<WebhookDeliveryStatus, string> = {
  succeeded: 'delivered',
  pending: 'pending',
  failed: 'failed',
};

function statusFilter(raw: unknown): WebhookDeliveryStatus | undefined {
  return typeof raw === 'string' && Object.hasOwn(STATUS_LABELS, raw)
    ? (raw as WebhookDeliveryStatus)
    : undefined;
}

/** A delivery id as the API's cursor and the replay's path take it. */
const DELIVERY_ID = /^dlv_\w{1,60}$/;

/**
 * `/dashboard/webhooks`: the user's delivery log, newest first (event, URL, status, attempts, the
 * last error and when it was tried), filtered by status, with Replay calling the API's own
 * `WebhookService.retry`.
 */
export function registerWebhooksPage(
  app: App,
  services: Pick<DashboardServices, 'webhooks'>,
  { sessions, signedIn, checkForm, notFound }: PageGuard,
): void {
  app.get('/dashboard/webhooks', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const query = request.query as Record<string, unknown>;
    const status = statusFilter(query.status);
    const cursor =
      typeof query.cursor === 'string' && DELIVERY_ID.test(query.cursor) ? query.cursor : undefined;
    let listed: Awaited<ReturnType<WebhookService['list']>>;
    try {
      listed = await services.webhooks.list(session.userId, {
        limit: DELIVERIES_PAGE_SIZE,
        ...(status ? { status } : {}),
        ...(cursor ? { cursor } : {}),
      });
    } catch (error) {
      // A cursor that names no delivery of this user's: start from the newest.
      if (error instanceof AppError && error.code === 'INVALID_REQUEST')
        return reply.redirect(listUrl(status), 303);
      throw error;
    }
    const body = webhooksPage(csrf, listed.items, listed.nextCursor, {
      status,
      paged: cursor !== undefined,
      notice: noticeOf(query),
    });
    return page(reply, 200, layout({ title: 'Webhooks', csrf, active: 'webhooks' }, body));
  });

  app.post('/dashboard/webhooks/:deliveryId/replay', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const form = checkForm(request, reply);
    if (!form) return reply;
    const { deliveryId } = request.params as { deliveryId: string };
    const back = statusFilter(form.status);
    let outcome = 'replayed';
    try {
      await services.webhooks.retry(session.userId, deliveryId);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code === 'NOT_FOUND') return notFound(reply, sessions.csrfToken(request, reply));
      if (error.code !== 'CONFLICT') throw error;
      outcome = 'queued';
    }
    return reply.redirect(
      `${listUrl(back)}${back ? '&' : '?'}${outcome}=${encodeURIComponent(deliveryId)}`,
      303,
    );
  });
}

function listUrl(status: WebhookDeliveryStatus | undefined): string {
  return status ? `/dashboard/webhooks?status=${status}` : '/dashboard/webhooks';
}

function noticeOf(query: Record<string, unknown>): Html | null {
  const id = (key: string) => (typeof query[key] === 'string' ? (query[key] as string) : null);
  const replayed = id('replayed');
  if (replayed)
    return html`Delivery <span class="mono">${replayed}</span> is queued again: it is sent within seconds.`;
  const queued = id('queued');
  if (queued)
    return html`Delivery <span class="mono">${queued}</span> is already queued: it is sent at its next attempt.`;
  return null;
}

/** When the delivery was last tried: its delivery time, or its last change once it has attempts. */
function lastAttempt(delivery: DeliveryView): string {
  if (delivery.deliveredAt) return formatDate(delivery.deliveredAt);
  return delivery.attempts > 0 ? formatDate(delivery.updatedAt) : '—';
}

function filterForm(status: WebhookDeliveryStatus | undefined): Html {
  const option = (value: WebhookDeliveryStatus | '', label: string) =>
    html`<option value="${value}" ${(status ?? '') === value ? html`selected` : ''}>${label}</option>`;
  return html`<form method="get" action="/dashboard/webhooks" class="filters">
    <label for="status-filter">Status <select id="status-filter" name="status">
      ${option('', 'All')}${option('failed', 'Failed')}${option('pending', 'Pending')}${option('succeeded', 'Delivered')}
    </select></label>
    <button type="submit">Filter</button>
  </form>`;
}

function replayForm(
  csrf: string,
  delivery: DeliveryView,
  status: WebhookDeliveryStatus | undefined,
): Html | string {
  // A pending delivery is queued already: the service would refuse it (409).
  if (delivery.status === 'pending') return html`<span class="muted">Queued</span>`;
  return html`<form method="post" action="/dashboard/webhooks/${delivery.id}/replay">
    <input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="status" value="${status ?? ''}">
    <button type="submit" aria-label="Replay ${delivery.event} to ${delivery.url}">Replay</button></form>`;
}

function deliveryRow(csrf: string, delivery: DeliveryView, status: WebhookDeliveryStatus | undefined): Html {
  return html`<tr data-delivery-id="${delivery.id}">
    <td><span class="nowrap">${formatDate(delivery.createdAt)}</span><div class="muted mono nowrap">${delivery.id}</div></td>
    <td class="nowrap">${delivery.event}</td>
    <td class="mono nowrap">${delivery.url}</td>
    <td><span class="status status-${delivery.status === 'succeeded' ? 'completed' : delivery.status}" data-field="status">${STATUS_LABELS[delivery.status]}</span></td>
    <td data-field="attempts">${delivery.attempts}${delivery.lastStatus === null ? '' : html` <span class="muted">(HTTP ${delivery.lastStatus})</span>`}</td>
    <td data-field="lastError">${delivery.lastError ?? '—'}</td>
    <td>${lastAttempt(delivery)}</td>
    <td>${replayForm(csrf, delivery, status)}</td>
  </tr>`;
}

export function webhooksPage(
  csrf: string,
  items: DeliveryView[],
  nextCursor: string | null,
  view: { status: WebhookDeliveryStatus | undefined; paged: boolean; notice: Html | null },
): Html {
  const { status } = view;
  const more = (cursor: string) =>
    `${listUrl(status)}${status ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`;
  return html`<h1>Webhooks</h1>
    <p class="muted">Every webhook sent to your URLs, newest first. A failed delivery was given up after its retries; Replay sends it again now with the same <code>webhook-id</code>.</p>
    ${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ''}
    ${filterForm(status)}
    ${
      items.length === 0
        ? html`<p class="empty">${view.paged ? 'No older deliveries.' : 'No deliveries yet.'}</p>`
        : html`<div class="table-wrap"><table class="deliveries">
      <thead><tr><th scope="col">Queued</th><th scope="col">Event</th><th scope="col">URL</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Last attempt</th><th scope="col">Action</th></tr></thead>
      <tbody>${items.map((delivery) => deliveryRow(csrf, delivery, status))}</tbody></table></div>`
    }
    <p class="pager">${view.paged ? html`<a href="${listUrl(status)}">Newest</a> ` : ''}${
      nextCursor ? html`<a href="${more(nextCursor)}" rel="next">Older</a>` : ''
    }</p>`;
}
