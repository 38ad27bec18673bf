import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { WebCallProvider } from '../../adapters/voice/web-provider.js';
import type { AgentCallFields } from '../../domain/agent-call.js';
import { BATCH_STATUSES, type BatchStatus } from '../../domain/batch.js';
import { batchSources, FINAL_BATCH_STATUSES, isFinalBatch } from '../../domain/batch-lifecycle.js';
import { AppError, fieldError } from '../../domain/errors.js';
import { findInputProblem } from '../../domain/input.js';
import type { AgentService } from '../../services/agents.js';
import type { BatchReads } from '../../services/batch-reads.js';
import type { BatchService } from '../../services/batches.js';
import type { CallReads } from '../../services/call-reads.js';
import type { CallService } from '../../services/calls.js';
import type { DashboardReads } from '../../services/dashboard.js';
import type { KeyService } from '../../services/keys.js';
import type { LiveControlService } from '../../services/live-control.js';
import type { AccountView, UserService } from '../../services/users.js';
import type { App } from '../route-kit.js';
import { CALLS_PAGE_SIZE, callsPage } from './calls-page.js';
import { CSP, escapeHtml, formatDate, formatDuration, Html, html, layout } from './html.js';
import { liveCallSection, registerLiveCallRoutes } from './live-call.js';
import { type DashboardSession, Sessions } from './session.js';
import { registerTalkRoutes, talkSection } from './talk.js';

export interface DashboardServices {
  keys: KeyService;
  users: UserService;
  calls: CallService;
  callReads: CallReads;
  agents: AgentService;
  batches: BatchService;
  batchReads: BatchReads;
  dashboard: DashboardReads;
  live: LiveControlService;
  webCalls: WebCallProvider;
}

const require = createRequire(import.meta.url);
/** Static files: our own, and uPlot's from its npm package. No CDN, nothing from outside. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'app.js': { file: fileURLToPath(new URL('./assets/app.js', import.meta.url)), type: 'text/javascript' },
  'live-call.js': {
    file: fileURLToPath(new URL('./assets/live-call.js', import.meta.url)),
    type: 'text/javascript',
  },
  'talk.js': { file: fileURLToPath(new URL('./assets/talk.js', import.meta.url)), type: 'text/javascript' },
  'talk-worklet.js': {
    file: fileURLToPath(new URL('./assets/talk-worklet.js', import.meta.url)),
    type: 'text/javascript',
  },
  'app.css': { file: fileURLToPath(new URL('./assets/app.css', import.meta.url)), type: 'text/css' },
  'uPlot.iife.min.js': { file: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript' },
  'favicon.svg': {
    file: fileURLToPath(new URL('./assets/favicon.svg', import.meta.url)),
    type: 'image/svg+xml',
  },
  'uPlot.min.css': { file: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css' },
};

type Form = Record<string, string>;

function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/(dashboard|api-keys)(\/[\w/-]*)?(\?[\w=&%-]*)?$/.test(next)
    ? next
    : '/dashboard';
}

function page(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .send(body);
}

function progressBar(percent: number, label: string): Html {
  const value = Math.max(0, Math.min(100, percent));
  return html`<progress max="100" value="${value.toFixed(1)}" aria-label="${label}">${value.toFixed(1)}%</progress>`;
}

/**
 * The monitoring pages: sign-in with an API key, the campaigns list, a live campaign page, a call
 * page, and the API keys page. Server-rendered HTML, a small script of our own for the live parts.
 */
export function registerDashboard(
  app: App,
  services: DashboardServices,
  options: { jwtSecret: string; secureCookies: boolean },
): void {
  const sessions = new Sessions(services.keys, options.jwtSecret, options.secureCookies);

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 16 * 1024 },
    (_request, body, done) => {
      const form = Object.fromEntries(new URLSearchParams(body as string));
      const problem = findInputProblem(form);
      if (problem) done(fieldError(problem.field, problem.message), undefined);
      else done(null, form);
    },
  );
  app.addHook('onRoute', hideFromDocument);

  /** The session, or a redirect to sign-in (pages) / 401 (JSON). */
  const signedIn = async (
    request: FastifyRequest,
    reply: FastifyReply,
    json = false,
  ): Promise<DashboardSession | null> => {
    const session = await sessions.read(request);
    if (session) return session;
    if (json) {
      reply.status(401).send({ error: 'Unauthorized', message: 'Sign in again' });
    } else {
      reply.redirect(`/sign-in?next=${encodeURIComponent(request.url)}`, 303);
    }
    return null;
  };
  const checkForm = (request: FastifyRequest, reply: FastifyReply): Form | null => {
    const form = (request.body ?? {}) as Form;
    if (!sessions.checkCsrf(request, form._csrf)) {
      page(
        reply,
        403,
        layout(
          { title: 'Forbidden' },
          html`<h1>This form expired</h1><p>Go back, reload the page and try again.</p>`,
        ),
      );
      return null;
    }
    return form;
  };
  const notFound = (reply: FastifyReply, csrf: string) =>
    page(
      reply,
      404,
      layout(
        { title: 'Not found', csrf },
        html`<h1>Not found</h1><p>There is nothing of yours here. <a href="/dashboard">Back to your campaigns</a>.</p>`,
      ),
    );

  registerLiveCallRoutes(app, services.live, {
    signedIn,
    checkCsrf: (request, given) => sessions.checkCsrf(request, given),
  });

  registerTalkRoutes(app, services, {
    signedIn,
    sameOrigin: (request) => sessions.sameOrigin(request),
    csrfToken: (request, reply) => sessions.csrfToken(request, reply),
    page,
    notFound,
  });

  app.get('/dashboard/assets/:file', async (request, reply) => {
    const file = (request.params as { file: string }).file;
    // Own keys only: `toString` or `__proto__` would otherwise be found on the object's prototype.
    const asset = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!asset) throw new AppError('ROUTE_NOT_FOUND');
    return reply
      .header('content-type', `${asset.type}; charset=utf-8`)
      .header('cache-control', 'public, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .send(fs.createReadStream(asset.file));
  });

  app.get('/sign-in', async (request, reply) => {
    const csrf = sessions.csrfToken(request, reply);
    const next = safeNext((request.query as { next?: string }).next);
    return page(reply, 200, signInPage(csrf, next, null));
  });

  app.post('/sign-in', async (request, reply) => {
    const form = checkForm(request, reply);
    if (!form) return reply;
    const next = safeNext(form.next);
    const session = form.apiKey ? await sessions.signIn(form.apiKey, reply) : null;
    if (!session) {
      const csrf = sessions.csrfToken(request, reply);
      return page(reply, 401, signInPage(csrf, next, 'That API key is not valid (or it was revoked).'));
    }
    return reply.redirect(next, 303);
  });

  app.post('/sign-out', async (request, reply) => {
    if (!checkForm(request, reply)) return reply;
    await sessions.signOut(request, reply);
    return reply.redirect('/sign-in', 303);
  });

  app.get('/dashboard', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const query = request.query as { status?: string; tag?: string };
    const status = BATCH_STATUSES.includes(query.status as BatchStatus)
      ? (query.status as BatchStatus)
      : undefined;
    const tag = query.tag?.trim().slice(0, 64) || undefined;
    const [{ items }, account] = await Promise.all([
      services.batchReads.list(session.userId, {
        limit: 200,
        ...(status ? { status } : {}),
        ...(tag ? { tag } : {}),
      }),
      services.users.account(session.userId),
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
    return page(reply, 200, layout({ title: 'Campaigns', csrf, active: 'campaigns' }, body));
  });

  app.get('/dashboard/api/batches/:batchId', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    try {
      const data = await services.dashboard.batch(
        session.userId,
        (request.params as { batchId: string }).batchId,
      );
      return reply.header('cache-control', 'no-store').send(data);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND')
        return reply.status(404).send({ error: 'Not Found' });
      throw error;
    }
  });

  app.get('/dashboard/api/calls/:callId', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    try {
      const call = await services.dashboard.call(
        session.userId,
        (request.params as { callId: string }).callId,
      );
      return reply
        .header('cache-control', 'no-store')
        .send({ transcription: call.transcription, summary: call.summary });
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND')
        return reply.status(404).send({ error: 'Not Found' });
      throw error;
    }
  });

  app.get('/dashboard/batches/:batchId', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const batchId = (request.params as { batchId: string }).batchId;
    let data: Awaited<ReturnType<DashboardReads['batch']>>;
    try {
      data = await services.dashboard.batch(session.userId, batchId);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') return notFound(reply, csrf);
      throw error;
    }
    return page(
      reply,
      200,
      layout({ title: data.batch.name, csrf, active: 'campaigns' }, batchPage(data, csrf)),
    );
  });

  app.post('/dashboard/batches/:batchId/cancel', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    if (!checkForm(request, reply)) return reply;
    const batchId = (request.params as { batchId: string }).batchId;
    try {
      await services.batches.cancel(session.userId, batchId);
      services.batchReads.forget(batchId);
    } catch (error) {
      if (
        !(error instanceof AppError) ||
        (error.code !== 'NOT_FOUND' && error.code !== 'BATCH_NOT_CANCELLABLE')
      )
        throw error;
      if (error.code === 'NOT_FOUND') return notFound(reply, sessions.csrfToken(request, reply));
    }
    return reply.redirect(`/dashboard/batches/${encodeURIComponent(batchId)}`, 303);
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(`/dashboard/batches/:batchId/${action}`, async (request, reply) => {
      const session = await signedIn(request, reply);
      if (!session) return reply;
      if (!checkForm(request, reply)) return reply;
      const batchId = (request.params as { batchId: string }).batchId;
      try {
        await services.batches[action](session.userId, batchId);
        services.batchReads.forget(batchId);
      } catch (error) {
        // A batch that finished (or resumed) meanwhile: the page shows what it is now.
        if (
          !(error instanceof AppError) ||
          (error.code !== 'NOT_FOUND' &&
            error.code !== 'BATCH_NOT_PAUSABLE' &&
            error.code !== 'BATCH_NOT_PAUSED')
        )
          throw error;
        if (error.code === 'NOT_FOUND') return notFound(reply, sessions.csrfToken(request, reply));
      }
      return reply.redirect(`/dashboard/batches/${encodeURIComponent(batchId)}`, 303);
    });
  }

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

  app.get('/dashboard/calls/:callId', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const callId = (request.params as { callId: string }).callId;
    let call: Awaited<ReturnType<DashboardReads['call']>>;
    try {
      call = await services.dashboard.call(session.userId, callId);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') return notFound(reply, csrf);
      throw error;
    }
    const recording = services.calls.recordingPath(call.id, call.status as never, call.duration);
    return page(
      reply,
      200,
      layout(
        { title: `Call ${call.id}`, csrf, active: call.batchId ? 'campaigns' : 'calls' },
        callPage(call, recording, csrf),
      ),
    );
  });

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

/**
 * The dashboard's pages are for browsers, not part of the API: kept out of the OpenAPI document
 * (docs/decisions.md), which lists only what API clients call.
 */
function hideFromDocument(route: RouteOptions): void {
  route.schema = { ...route.schema, hide: true } as RouteOptions['schema'];
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

function signInPage(csrf: string, next: string, error: string | null): string {
  return layout(
    { title: 'Sign in' },
    html`<section class="narrow">
      <h1>Sign in</h1>
      <p>Paste one of your API keys. It is exchanged for a session cookie; the key itself is not kept in the browser.</p>
      ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
      <form method="post" action="/sign-in">
        <input type="hidden" name="_csrf" value="${csrf}">
        <input type="hidden" name="next" value="${next}">
        <label for="apiKey">API key</label>
        <input id="apiKey" name="apiKey" type="password" autocomplete="off" required autofocus>
        <button type="submit">Sign in</button>
      </form>
    </section>`,
  );
}

/**
 * A campaign control (cancel, pause, resume). Every one is on the page, hidden while the batch's
 * status does not allow it; the page's script shows and hides them as the status changes, from the
 * statuses the lifecycle allows (data-when), so a page opened while the batch was still ingesting
 * offers pause as soon as it can be paused.
 */
function controlForm(
  batch: { batchId: string; status: BatchStatus },
  csrf: string,
  event: 'cancel' | 'pause' | 'resume',
  label: string,
  confirm?: string,
): Html {
  const allowed = batchSources(event);
  return html`<form method="post" action="/dashboard/batches/${batch.batchId}/${event}" id="${event}-form" data-when="${allowed.join(',')}"${confirm ? html` data-confirm="${confirm}"` : ''}${allowed.includes(batch.status) ? '' : html` hidden`}>
          <input type="hidden" name="_csrf" value="${csrf}">
          <button type="submit"${event === 'cancel' ? html` class="danger"` : ''}>${label}</button></form>`;
}

function batchPage(data: Awaited<ReturnType<DashboardReads['batch']>>, csrf: string): Html {
  const { batch } = data;
  const s = batch.statistics;
  return html`
    <nav class="crumbs" aria-label="Breadcrumb"><a href="/dashboard">Campaigns</a> /</nav>
    <h1>${batch.name}</h1>
    <div id="batch" data-batch-id="${batch.batchId}" data-final="${isFinalBatch(batch.status) ? 'true' : 'false'}" data-final-statuses="${FINAL_BATCH_STATUSES.join(',')}">
      <p><span class="status status-${batch.status}" data-field="status" aria-live="polite">${batch.status}</span>
        <span class="muted mono">${batch.batchId}</span> · priority ${batch.priority}
        ${batch.tags.map((t) => html` <span class="tag">${t}</span>`)}</p>
      ${batch.error ? html`<p class="error" role="alert">${batch.error.code ?? ''} ${batch.error.message}</p>` : ''}
      <div class="progress-row">${progressBar(s.percentComplete, 'Campaign progress')}
        <span data-field="percent" aria-live="polite">${s.percentComplete}%</span></div>
      <p class="muted">These figures count contacts: a contact dialed again after no answer counts once.</p>
      <dl class="stats" aria-live="polite">
        <div><dt>Contacts</dt><dd data-field="total">${s.total}</dd></div>
        <div><dt>Processed</dt><dd data-field="processed">${s.processed}</dd></div>
        <div><dt>Succeeded</dt><dd data-field="succeeded">${s.succeeded}</dd></div>
        <div><dt>Failed</dt><dd data-field="failed">${s.failed}</dd></div>
        <div><dt>Pending</dt><dd data-field="pending">${s.pending}</dd></div>
        <div><dt>Waiting for window</dt><dd data-field="waitingForWindow">${s.waitingForWindow}</dd></div>
        <div><dt>Success rate</dt><dd data-field="successRate">${s.successRate}%</dd></div>
        <div><dt>Calls / s</dt><dd data-field="callsPerSecond">${batch.performance.callsPerSecond}</dd></div>
        <div><dt>Time left</dt><dd data-field="eta">${timeLeftText(batch.performance.estimatedTimeRemaining)}</dd></div>
      </dl>
      ${controlForm(batch, csrf, 'cancel', 'Cancel campaign', 'Cancel this campaign? Queued contacts will not be called.')}
      ${controlForm(batch, csrf, 'pause', 'Pause campaign')}
      ${controlForm(batch, csrf, 'resume', 'Resume campaign')}
      ${talkSection(batch.agentId, 'the campaign’s agent')}
      <section aria-labelledby="chart-title"><h2 id="chart-title">Calls per second</h2>
        <div id="chart" class="chart" role="img" aria-label="Calls started per second"></div></section>
      <section aria-labelledby="outcomes-title"><h2 id="outcomes-title">Outcomes of call attempts</h2>
        <p class="muted">Every attempt counts, retries included: a contact busy once then answered counts in BUSY and in COMPLETED.</p>
        <ul id="outcomes" class="outcomes" aria-live="polite">${Object.entries(data.outcomes).map(([status, count]) => html`<li><span class="status status-${status}">${status}</span> ${count}</li>`)}</ul></section>
      <section aria-labelledby="calls-title"><h2 id="calls-title">Recent calls</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">Call</th><th scope="col">Contact</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Summary</th><th scope="col">Transcript</th></tr></thead>
        <tbody id="calls">${data.calls.map(
          (c) => html`<tr><td><a href="/dashboard/calls/${c.id}">${formatDate(c.createdAt)}</a></td>
            <td>${c.contactName}<div class="muted">${c.phoneNumber}</div></td>
            <td><span class="status status-${c.status}">${c.status}</span></td><td>${formatDuration(c.duration)}</td>
            <td>${c.summary ?? ''}</td>
            <td>${c.hasTranscript ? html`<button type="button" class="link" data-transcript="${c.id}" aria-expanded="false">Show</button>` : html`<span class="muted">${c.status === 'ONGOING' ? 'Not yet' : 'None'}</span>`}</td></tr>`,
        )}</tbody></table></div></section>
    </div>`;
}

function callPage(
  call: Awaited<ReturnType<DashboardReads['call']>>,
  recording: string | null,
  csrf: string,
): Html {
  const metrics = call.metricJson ?? {};
  return html`
    <nav class="crumbs" aria-label="Breadcrumb">${
      call.batchId
        ? html`<a href="/dashboard">Campaigns</a> / <a href="/dashboard/batches/${call.batchId}">${call.batchName ?? call.batchId}</a> /`
        : html`<a href="/dashboard/calls">Calls</a> /`
    }</nav>
    <h1>${call.channel === 'web' ? html`Web call with ${call.agentName}` : html`Call to ${call.contactName}`}</h1>
    <p><span class="status status-${call.status}">${call.status}</span> <span class="muted mono">${call.id}</span></p>
    <dl class="stats">
      <div><dt>Channel</dt><dd data-field="channel">${call.channel === 'web' ? 'Web (browser)' : 'Phone'}</dd></div>
      ${call.channel === 'web' ? '' : html`<div><dt>Number</dt><dd>${call.phoneNumber}</dd></div>`}
      <div><dt>Agent</dt><dd>${call.agentName}</dd></div>
      <div><dt>Attempt</dt><dd>${call.attempt}</dd></div>
      <div><dt>Duration</dt><dd>${formatDuration(call.duration)}</dd></div>
      ${call.sipCode === null ? '' : html`<div><dt>SIP answer</dt><dd>${call.sipCode}</dd></div>`}
      ${call.agent.endedReason === null ? '' : html`<div><dt>Ended by</dt><dd data-field="endedReason">${call.agent.endedReason}</dd></div>`}
      ${
        call.agent.latency === null
          ? ''
          : html`<div><dt>Voice to voice</dt><dd data-field="voiceToVoice">p50 ${call.agent.latency.voiceToVoiceP50Ms} ms · p95 ${call.agent.latency.voiceToVoiceP95Ms} ms</dd></div>`
      }
    </dl>
    <section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>
      <ol class="timeline">
        <li>${call.channel === 'web' ? 'Opened from the browser' : 'Dialed'} ${formatDate(call.createdAt)}</li>
        ${call.answeredAt ? html`<li>Answered ${formatDate(call.answeredAt)}</li>` : ''}
        ${call.endedAt ? html`<li>Ended ${formatDate(call.endedAt)} (${call.status})</li>` : html`<li>In progress</li>`}
        ${call.error ? html`<li class="error">${call.error}</li>` : ''}
      </ol></section>
    <section aria-labelledby="consent-title"><h2 id="consent-title">Consent</h2>
      ${
        call.consent
          ? html`<dl class="stats" id="consent">
              <div><dt>Source</dt><dd data-field="consentSource">${call.consent.source}</dd></div>
              <div><dt>Obtained</dt><dd data-field="consentObtainedAt">${formatDate(call.consent.obtainedAt)}</dd></div>
            </dl>${call.consent.text ? html`<blockquote data-field="consentText">${call.consent.text}</blockquote>` : ''}`
          : html`<p class="muted" id="consent">No consent record.</p>`
      }</section>
    ${call.status === 'ONGOING' ? liveCallSection(call.id, csrf, call.channel !== 'web') : ''}
    ${agentSections(call.agent)}
    ${recording ? html`<section aria-labelledby="rec-title"><h2 id="rec-title">Recording</h2><audio controls preload="none" src="${recording}"></audio></section>` : ''}
    <section aria-labelledby="summary-title"><h2 id="summary-title">Summary</h2>
      <p id="summary">${call.summary ?? (call.analysisStatus === 'pending' ? 'Being analysed…' : 'No summary.')}</p>
      ${
        call.metricJson
          ? html`<dl class="stats">${Object.entries(metrics).map(
              ([name, value]) =>
                html`<div><dt>${name}</dt><dd>${Array.isArray(value) ? html`<ul>${value.map((v) => html`<li>${String(v)}</li>`)}</ul>` : String(value)}</dd></div>`,
            )}</dl>`
          : ''
      }</section>
    <section aria-labelledby="transcript-title"><h2 id="transcript-title">Transcript</h2>
      ${
        call.transcription.length === 0
          ? html`<p class="muted">Nothing was said.</p>`
          : html`<ol class="transcript">${call.transcription.map((t) => html`<li class="${t.role}"><strong>${t.role === 'assistant' ? 'Agent' : 'Contact'}</strong> ${t.content}</li>`)}</ol>`
      }</section>`;
}

/** The time left as the page shows it (app.js writes the same). */
function timeLeftText(ms: number | null): string {
  return ms === null ? '—' : formatDuration(Math.round(ms / 1000));
}

/** A turn figure in ms, or a dash for a stage that did not run. */
const ms = (value: number | null) => (value === null ? '—' : `${Math.round(value)}`);

/** The call page's AI agent sections: each turn's latency figures and the tools the model called. */
function agentSections(agent: AgentCallFields): Html | string {
  const turns =
    agent.turns.length === 0
      ? ''
      : html`<section aria-labelledby="turns-title"><h2 id="turns-title">Turns</h2>
      <div class="table-wrap"><table id="turns"><caption class="muted">Latency of each agent turn, in ms</caption>
        <thead><tr><th scope="col">Turn</th><th scope="col">Endpointing</th><th scope="col">Speech to text</th><th scope="col">LLM first token</th><th scope="col">TTS first byte</th><th scope="col">Voice to voice</th></tr></thead>
        <tbody>${agent.turns.map(
          (turn, index) =>
            html`<tr><td>${index + 1}</td><td>${ms(turn.endpointingMs)}</td><td>${ms(turn.sttMs)}</td><td>${ms(turn.llmFirstTokenMs)}</td><td>${ms(turn.ttsFirstByteMs)}</td><td>${ms(turn.voiceToVoiceMs)}</td></tr>`,
        )}</tbody></table></div></section>`;
  const tools =
    agent.toolCalls.length === 0
      ? ''
      : html`<section aria-labelledby="tools-title"><h2 id="tools-title">Tool calls</h2>
      <ol class="tool-calls" id="tool-calls">${agent.toolCalls.map(
        (
          call,
        ) => html`<li><strong class="mono">${call.name}</strong> <span class="muted">${formatDate(call.at)}, ${call.durationMs} ms</span>
          <div class="mono">${JSON.stringify(call.arguments)}</div>
          ${call.error === null ? html`<div class="mono">→ ${JSON.stringify(call.result)}</div>` : html`<div class="error">${call.error}</div>`}</li>`,
      )}</ol></section>`;
  return html`${turns}${tools}`;
}

async function keysPage(
  services: DashboardServices,
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
