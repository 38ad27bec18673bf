import { BATCH_STATUSES, type BatchStatus } from '../../../domain/batch.js';
import type { AccountView } from '../../../services/users.js';
import type { App } from '../../route-kit.js';
import { formatDate, Html, html, layout, progressBar } from '../html.js';
import { type DashboardServices, type PageGuard, page } from '../page-kit.js';

/** `/dashboard`: the account at a glance and the campaigns, filtered by status or tag. */
export function registerCampaignsPage(
  app: App,
  services: Pick<DashboardServices, 'batchReads' | 'users' | 'health'>,
  { sessions, signedIn }: PageGuard,
): void {
  app.get('/dashboard', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const query = request.query as { status?: string; tag?: string };
    const status = BATCH_STATUSES.includes(query.status as BatchStatus)
      ? (query.status as BatchStatus)
      : undefined;
    const tag = query.tag?.trim().slice(0, 64) || undefined;
    const [{ items }, account, outages] = await Promise.all([
      services.batchReads.list(session.userId, {
        limit: 200,
        ...(status ? { status } : {}),
        ...(tag ? { tag } : {}),
      }),
      services.users.account(session.userId),
      services.health.outages(session.userId),
    ]);
    const body = html`
      <h1>Campaigns</h1>
      ${accountPanel(account)}
      <form method="get" action="/dashboard" class="filters" role="search">
        <label>Status
          <select name="status">
            <option value="">Any</option>
            ${BATCH_STATUSES.map((s) => html`<option value="${s}" ${s === status ? new Html('selected') : ''}>${s}</option>`)}
          </select>
        </label>
        <label>Tag <input name="tag" value="${tag ?? ''}" maxlength="64"></label>
        <button type="submit">Filter</button>
      </form>
      ${
        items.length === 0
          ? html`<p class="empty">No campaigns${status || tag ? ' match these filters' : ' yet: submit one with POST /api/v1/batch'}.</p>`
          : html`<div class="table-wrap"><table class="batches">
        <thead><tr><th>Campaign</th><th>Status</th><th>Progress</th><th>Succeeded</th><th>Failed</th><th>Priority</th><th>Tags</th><th>Created</th></tr></thead>
        <tbody>${items.map(
          (b) => html`<tr>
            <td><a href="/dashboard/batches/${b.batchId}">${b.name}</a><div class="muted mono">${b.batchId}</div></td>
            <td><span class="status status-${b.status}">${b.status}</span></td>
            <td>${progressBar(b.percentComplete, `Progress of ${b.name}`)} <span class="muted">${b.processed} / ${b.total}</span></td>
            <td>${b.succeeded}</td><td>${b.failed}</td><td>${b.priority}</td>
            <td>${b.tags.map((t) => html`<a class="tag" href="/dashboard?tag=${encodeURIComponent(t)}">${t}</a> `)}</td>
            <td>${formatDate(b.createdAt)}</td>
          </tr>`,
        )}</tbody></table></div>`
      }`;
    return page(reply, 200, layout({ title: 'Campaigns', csrf, active: 'campaigns', outages }, body));
  });
}

/** The account at a glance (GET /api/v1/account): what may still be spent and run. */
function accountPanel(account: AccountView): Html {
  return html`<section class="account" aria-label="Account">
    <dl class="stats">
      <div><dt>Minutes available</dt><dd data-field="availableMinutes">${account.availableMinutes}</dd></div>
      <div><dt>Minutes reserved</dt><dd data-field="reservedMinutes">${account.reservedMinutes}</dd></div>
      <div><dt>Calls in progress</dt><dd data-field="activeCalls">${account.activeCalls} / ${account.maxConcurrentCalls}</dd></div>
    </dl>
  </section>`;
}
