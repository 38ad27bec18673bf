import type { BatchStatus } from '../../../domain/batch.js';
import { batchSources, FINAL_BATCH_STATUSES, isFinalBatch } from '../../../domain/batch-lifecycle.js';
import { AppError } from '../../../domain/errors.js';
import type { DashboardReads } from '../../../services/dashboard.js';
import type { App } from '../../route-kit.js';
import { formatDate, formatDuration, type Html, html, layout, progressBar } from '../html.js';
import { type DashboardServices, orNotFound, type PageGuard, page } from '../page-kit.js';
import { talkSection } from '../talk.js';

/** A campaign's live page, the JSON its script polls, and its cancel, pause and resume forms. */
export function registerBatchPage(
  app: App,
  services: Pick<DashboardServices, 'batches' | 'dashboard' | 'health'>,
  { sessions, signedIn, checkForm, notFound }: PageGuard,
): void {
  app.get('/dashboard/api/batches/:batchId', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    const data = await orNotFound(
      services.dashboard.batch(session.userId, (request.params as { batchId: string }).batchId),
    );
    if (!data) return reply.status(404).send({ error: 'Not Found' });
    return reply.header('cache-control', 'no-store').send(data);
  });

  app.get('/dashboard/batches/:batchId', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const batchId = (request.params as { batchId: string }).batchId;
    const [data, outages] = await Promise.all([
      orNotFound(services.dashboard.batch(session.userId, batchId)),
      services.health.outages(session.userId),
    ]);
    if (!data) return notFound(reply, csrf);
    return page(
      reply,
      200,
      layout({ title: data.batch.name, csrf, active: 'campaigns', outages }, batchPage(data, csrf)),
    );
  });

  app.post('/dashboard/batches/:batchId/cancel', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    if (!checkForm(request, reply)) return reply;
    const batchId = (request.params as { batchId: string }).batchId;
    try {
      await services.batches.cancel(session.userId, batchId);
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
        <div><dt>Calls / s now</dt><dd data-field="effectiveCallsPerSecond">${batch.performance.effectiveCallsPerSecond}</dd></div>
        <div><dt>Time left</dt><dd data-field="eta">${timeLeftText(batch.performance.estimatedTimeRemaining)}</dd></div>
      </dl>
      <p>Throttled: <span data-field="throttle" data-reason="${batch.throttle?.reason ?? ''}" aria-live="polite">${data.throttleText}</span></p>
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

/** The time left as the page shows it (app.js writes the same). */
function timeLeftText(ms: number | null): string {
  return ms === null ? '—' : formatDuration(Math.round(ms / 1000));
}
