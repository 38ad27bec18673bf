import { AppError } from '../../../domain/errors.js';
import type { KeyService } from '../../../services/keys.js';
import type { App } from '../../route-kit.js';
import { escapeHtml, formatDate, html, layout } from '../html.js';
import { type DashboardServices, type PageGuard, page } from '../page-kit.js';
import type { DashboardSession } from '../session.js';

/** The API keys page: create and revoke keys, show and rotate the webhook signing secret. */
export function registerApiKeysPage(
  app: App,
  services: Pick<DashboardServices, 'keys' | 'users'>,
  { sessions, signedIn, checkForm, notFound }: PageGuard,
): void {
  app.get('/api-keys', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    return page(reply, 200, await keysPage(services, session, csrf, null));
  });

  app.post('/api-keys', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const form = checkForm(request, reply);
    if (!form) return reply;
    const name = (form.name ?? '').trim().slice(0, 100) || 'Dashboard key';
    const csrf = sessions.csrfToken(request, reply);
    const expiresAt = keyExpiry(form.expiresOn);
    const refused = (message: string) =>
      keysPage(services, session, csrf, null, `The key was not created: ${message}`);
    if (expiresAt === 'invalid') return page(reply, 400, await refused('the expiry date is not a date.'));
    let created: Awaited<ReturnType<KeyService['create']>>;
    try {
      created = await services.keys.create(session.userId, { name, ...(expiresAt ? { expiresAt } : {}) });
    } catch (error) {
      // The service's own rule (expiry in the future), shown on the form instead of as JSON.
      if (!(error instanceof AppError) || error.code !== 'INVALID_REQUEST') throw error;
      return page(reply, 400, await refused('the expiry date must be today or later.'));
    }
    return page(
      reply,
      201,
      await keysPage(services, session, csrf, { id: created.id, key: created.key, name }),
    );
  });

  app.post('/api-keys/:keyId/revoke', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    if (!checkForm(request, reply)) return reply;
    try {
      await services.keys.revoke((request.params as { keyId: string }).keyId, session.userId);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'NOT_FOUND') throw error;
      return notFound(reply, sessions.csrfToken(request, reply));
    }
    return reply.redirect('/api-keys', 303);
  });

  // The webhook secret, only when asked for (the page hides it: it is on screen in every screen
  // share otherwise). JSON for the page's script, with the CSRF token in a header so another site
  // cannot make the browser fetch it.
  app.get('/dashboard/api/webhook-secret', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    if (!sessions.checkCsrf(request, request.headers['x-csrf-token'])) {
      return reply.status(403).send({ error: 'Forbidden', message: 'Reload the page and try again' });
    }
    const secret = await services.users.webhookSecret(session.userId);
    return reply.header('cache-control', 'no-store').send({ secret: secret.secret });
  });

  app.post('/api-keys/webhook-secret/rotate', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    if (!checkForm(request, reply)) return reply;
    await services.users.rotateWebhookSecret(session.userId);
    return reply.redirect('/api-keys#webhook-secret', 303);
  });
}

/**
 * The key form's expiry date (`YYYY-MM-DD`, from a date input): the key works through that day in
 * UTC, so it expires at the following midnight UTC. Empty: the key never expires.
 */
export function keyExpiry(value: string | undefined): Date | null | 'invalid' {
  if (!value) return null;
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return 'invalid';
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day + 1));
  // Date.UTC rolls 2025-02-30 over into March: such a day does not exist.
  const back = new Date(date.getTime() - 86_400_000);
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) {
    return 'invalid';
  }
  return date;
}

async function keysPage(
  services: Pick<DashboardServices, 'keys' | 'users'>,
  session: DashboardSession,
  csrf: string,
  created: { id: string; key: string; name: string } | null,
  error: string | null = null,
): Promise<string> {
  const [keys, secret] = await Promise.all([
    services.keys.list(session.userId),
    services.users.webhookSecret(session.userId),
  ]);
  const body = html`
    <h1>API keys</h1>
    ${
      created
        ? html`<div class="notice" role="status"><p>New key <strong>${created.name}</strong>. Copy it now: it is shown only once.</p>
        <p><code id="new-key" class="secret">${created.key}</code> <button type="button" data-copy="new-key">Copy</button></p></div>`
        : ''
    }
    ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
    <form method="post" action="/api-keys" class="inline-form">
      <input type="hidden" name="_csrf" value="${csrf}">
      <label>Name <input name="name" maxlength="100" placeholder="e.g. CRM integration"></label>
      <label>Expires at the end of (UTC; empty: never) <input type="date" name="expiresOn"></label>
      <button type="submit">Create key</button>
    </form>
    <div class="table-wrap"><table class="keys"><thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col">Action</th></tr></thead>
    <tbody>${keys.map(
      (
        k,
      ) => html`<tr data-key-id="${k.id}"><td>${k.name}${k.id === session.keyId ? html` <span class="muted">(this session)</span>` : ''}<div class="muted mono">${k.id}</div></td>
        <td>${formatDate(k.createdAt)}</td><td>${formatDate(k.lastUsedAt)}</td><td data-field="expiresAt">${k.expiresAt ? formatDate(k.expiresAt) : 'Never'}</td><td><span class="status status-${k.status}">${k.status}</span></td>
        <td>${
          k.status === 'active'
            ? html`<form method="post" action="/api-keys/${k.id}/revoke" data-confirm="${k.id === session.keyId ? 'Revoke the key of this session? You will be signed out.' : `Revoke ${escapeHtml(k.name)}? Anything using it stops working.`}">
              <input type="hidden" name="_csrf" value="${csrf}"><button type="submit" class="danger">Revoke</button></form>`
            : ''
        }</td></tr>`,
    )}</tbody></table></div>
    <section id="webhook-secret" aria-labelledby="secret-title"><h2 id="secret-title">Webhook signing secret</h2>
      <p>Deliveries are signed with it (<code>x-outdial-signature</code> and <code>webhook-signature</code>).</p>
      <p><code id="secret" class="secret" aria-live="polite">Hidden</code>
        <button type="button" data-reveal="secret" data-csrf="${csrf}" aria-controls="secret" aria-expanded="false">Show secret</button>
        <button type="button" data-copy="secret" hidden>Copy</button></p>
      ${secret.previousSecret ? html`<p class="muted">The previous secret still signs too until ${formatDate(new Date(Date.parse(secret.rotatedAt ?? '') + 86_400_000).toISOString())}.</p>` : ''}
      <form method="post" action="/api-keys/webhook-secret/rotate" data-confirm="Rotate the webhook secret? The old one keeps signing for 24 hours.">
        <input type="hidden" name="_csrf" value="${csrf}"><button type="submit">Rotate secret</button></form>
    </section>`;
  return layout({ title: 'API keys', csrf, active: 'keys' }, body);
}
