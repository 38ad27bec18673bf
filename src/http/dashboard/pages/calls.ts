import { AppError } from '../../../domain/errors.js';
import type { CallListItem, CallReads } from '../../../services/calls/reads.js';
import type { App } from '../../route-kit.js';
import { formatDate, formatDuration, type Html, html, layout } from '../html.js';
import { type DashboardServices, type PageGuard, page } from '../page-kit.js';

/** Calls on one page of the single-calls list: a day of manual dialing at most, read at a glance. */
export const CALLS_PAGE_SIZE = 50;

/**
 * The user's single calls (dialed one at a time, outside any campaign), newest first, each linking
 * to its call page. Campaign calls are on their campaign's page, so they are not repeated here.
 */
export function callsPage(items: CallListItem[], nextCursor: string | null, paged: boolean): Html {
  return html`
    <h1>Calls</h1>
    <p class="muted">Calls placed one at a time (<code>POST /api/v1/call/dial</code>) and web calls (an agent's Talk button), newest first. A campaign's calls are on its page.</p>
    ${
      items.length === 0
        ? html`<p class="empty">${paged ? 'No older calls.' : 'No single calls yet: place one with POST /api/v1/call/dial or outdial call dial.'}</p>`
        : html`<div class="table-wrap"><table class="calls">
        <thead><tr><th scope="col">Call</th><th scope="col">Contact</th><th scope="col">Channel</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Ended</th></tr></thead>
        <tbody>${items.map(
          (c) => html`<tr data-call-id="${c.callId}">
            <td><a href="/dashboard/calls/${c.callId}">${formatDate(c.createdAt)}</a><div class="muted mono">${c.callId}</div></td>
            <td>${c.contactName}${c.channel === 'web' ? '' : html`<div class="muted">${c.phoneNumber}</div>`}</td>
            <td data-field="channel">${c.channel === 'web' ? 'Web' : 'Phone'}</td>
            <td><span class="status status-${c.status}">${c.status}</span></td>
            <td>${formatDuration(c.duration)}</td>
            <td>${formatDate(c.endedAt)}</td>
          </tr>`,
        )}</tbody></table></div>`
    }
    <p class="pager">${paged ? html`<a href="/dashboard/calls">Newest calls</a> ` : ''}${
      nextCursor
        ? html`<a href="/dashboard/calls?cursor=${encodeURIComponent(nextCursor)}" rel="next">Older calls</a>`
        : ''
    }</p>`;
}

/** `/dashboard/calls`: the single calls, a page at a time. */
export function registerCallsPage(
  app: App,
  services: Pick<DashboardServices, 'callReads'>,
  { sessions, signedIn }: PageGuard,
): void {
  app.get('/dashboard/calls', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const raw = (request.query as { cursor?: unknown }).cursor;
    const cursor = typeof raw === 'string' && /^call_\w{1,59}$/.test(raw) ? raw : undefined;
    let result: Awaited<ReturnType<CallReads['list']>>;
    try {
      result = await services.callReads.list(session.userId, {
        singleOnly: true,
        limit: CALLS_PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
      });
    } catch (error) {
      // A cursor that names no call of this user's (edited by hand): start from the newest.
      if (error instanceof AppError && error.code === 'INVALID_PARAMETER')
        return reply.redirect('/dashboard/calls', 303);
      throw error;
    }
    const body = callsPage(result.items, result.nextCursor, cursor !== undefined);
    return page(reply, 200, layout({ title: 'Calls', csrf, active: 'calls' }, body));
  });
}
