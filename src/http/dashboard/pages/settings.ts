import { type AccountView, WEBHOOK_SECRET_OVERLAP_MS } from '../../../services/users.js';
import type { App } from '../../route-kit.js';
import { formatDate, type Html, html, layout } from '../html.js';
import { type DashboardServices, type PageGuard, page } from '../page-kit.js';

type SettingsServices = Pick<DashboardServices, 'users'>;
type DayUsage = { day: string; minutes: number };
type SecretState = { previousSecret: string | null; rotatedAt: string | null };

/**
 * `/dashboard/settings`: the account (minutes, reserved minutes, the concurrency cap), the minutes
 * charged per day as a chart with its table, and the webhook signing secret (shown on demand,
 * rotated with the same service call as the API keys page).
 */
export function registerSettingsPage(
  app: App,
  services: SettingsServices,
  { sessions, signedIn, checkForm }: PageGuard,
): void {
  app.get('/dashboard/settings', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const [account, usage, secret] = await Promise.all([
      services.users.account(session.userId),
      services.users.usageByDay(session.userId),
      services.users.webhookSecret(session.userId),
    ]);
    const body = html`<h1>Settings</h1>
      ${accountSection(account)}
      ${usageSection(usage)}
      ${secretSection(csrf, secret)}`;
    return page(reply, 200, layout({ title: 'Settings', csrf, active: 'settings' }, body));
  });

  app.post('/dashboard/settings/webhook-secret/rotate', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    if (!checkForm(request, reply)) return reply;
    await services.users.rotateWebhookSecret(session.userId);
    return reply.redirect('/dashboard/settings#webhook-secret', 303);
  });
}

function accountSection(account: AccountView): Html {
  return html`<section aria-labelledby="account-title"><h2 id="account-title">Account</h2>
    <dl class="settings" data-field="account">
      <div><dt>Available minutes</dt><dd data-field="availableMinutes">${account.availableMinutes}</dd></div>
      <div><dt>Reserved by calls in progress</dt><dd data-field="reservedMinutes">${account.reservedMinutes}</dd></div>
      <div><dt>Calls in progress</dt><dd data-field="activeCalls">${account.activeCalls}</dd></div>
      <div><dt>Concurrency cap</dt><dd data-field="maxConcurrentCalls">${account.maxConcurrentCalls} calls at once</dd></div>
    </dl>
    <p class="muted">Each call in progress holds one minute until it ends and is charged. Minutes and the cap are set by your administrator.</p>
  </section>`;
}

/** The chart (drawn by app.js from the table's rows) and the same figures as a table. */
function usageSection(usage: DayUsage[]): Html {
  const total = usage.reduce((sum, day) => sum + day.minutes, 0);
  return html`<section aria-labelledby="usage-title"><h2 id="usage-title">Usage by day</h2>
    <p>Minutes charged per day (UTC) over the last ${usage.length} days: <strong data-field="usageTotal">${total}</strong> in all.</p>
    <div id="usage-chart" class="chart" role="img" aria-label="Chart of the minutes charged per day over the last ${usage.length} days, ${total} in all; the same figures are in the table below"></div>
    <details><summary>Usage as a table</summary>
      <div class="table-wrap"><table id="usage-table" class="usage">
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Minutes charged</th></tr></thead>
        <tbody>${usage.map(
          (row) =>
            html`<tr data-day="${row.day}" data-minutes="${row.minutes}"><td>${row.day}</td><td>${row.minutes}</td></tr>`,
        )}</tbody></table></div>
    </details>
  </section>`;
}

/** The signing secret, hidden until asked for (app.js fetches it with the page's CSRF token). */
function secretSection(csrf: string, secret: SecretState): Html {
  const overlapEnds = secret.rotatedAt
    ? new Date(Date.parse(secret.rotatedAt) + WEBHOOK_SECRET_OVERLAP_MS).toISOString()
    : null;
  return html`<section id="webhook-secret" aria-labelledby="secret-title"><h2 id="secret-title">Webhook signing secret</h2>
    <p>Every delivery is signed with it (<code>x-outdial-signature</code> and <code>webhook-signature</code>); check the signature before trusting a webhook.</p>
    <p><code id="secret" class="secret" aria-live="polite">Hidden</code>
      <button type="button" data-reveal="secret" data-csrf="${csrf}" aria-controls="secret" aria-expanded="false">Show secret</button>
      <button type="button" data-copy="secret" hidden>Copy</button></p>
    ${secret.previousSecret && overlapEnds ? html`<p class="muted">The previous secret still signs too until ${formatDate(overlapEnds)}.</p>` : ''}
    <form method="post" action="/dashboard/settings/webhook-secret/rotate" data-confirm="Rotate the webhook secret? The old one keeps signing for 24 hours.">
      <input type="hidden" name="_csrf" value="${csrf}"><button type="submit">Rotate secret</button></form>
  </section>`;
}
