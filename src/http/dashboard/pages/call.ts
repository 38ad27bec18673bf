import type { AgentCallFields } from '../../../domain/agent-call.js';
import type { FailureSource } from '../../../domain/failure.js';
import type { DashboardReads } from '../../../services/dashboard.js';
import type { App } from '../../route-kit.js';
import { formatDate, formatDuration, type Html, html, layout } from '../html.js';
import { liveCallSection } from '../live-call.js';
import { type DashboardServices, orNotFound, type PageGuard, page } from '../page-kit.js';

/** A call's page, and the transcript and summary the campaign page's script opens. */
export function registerCallPage(
  app: App,
  services: Pick<DashboardServices, 'recordings' | 'dashboard'>,
  { sessions, signedIn, notFound }: PageGuard,
): void {
  app.get('/dashboard/api/calls/:callId', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    const call = await orNotFound(
      services.dashboard.call(session.userId, (request.params as { callId: string }).callId),
    );
    if (!call) return reply.status(404).send({ error: 'Not Found' });
    return reply
      .header('cache-control', 'no-store')
      .send({ transcription: call.transcription, summary: call.summary });
  });

  app.get('/dashboard/calls/:callId', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const callId = (request.params as { callId: string }).callId;
    const call = await orNotFound(services.dashboard.call(session.userId, callId));
    if (!call) return notFound(reply, csrf);
    const recording = services.recordings.recordingPath(call.id, call.status as never, call.duration);
    return page(
      reply,
      200,
      layout(
        { title: `Call ${call.id}`, csrf, active: call.batchId ? 'campaigns' : 'calls' },
        callPage(call, recording, csrf),
      ),
    );
  });
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
      <div><dt>Duration</dt><dd data-field="duration">${call.status === 'ONGOING' ? 'In progress' : formatDuration(call.duration)}</dd></div>
      ${call.sipCode === null ? '' : html`<div><dt>SIP answer</dt><dd>${call.sipCode}</dd></div>`}
      ${call.agent.endedReason === null ? '' : html`<div><dt>Ended by</dt><dd data-field="endedReason">${call.agent.endedReason}</dd></div>`}
      ${call.agent.failureSource === null ? '' : html`<div><dt>Failed on</dt><dd data-field="failureSource">${FAILED_ON[call.agent.failureSource]}</dd></div>`}
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
    ${call.status === 'ONGOING' ? liveCallSection(call, csrf, call.channel !== 'web') : ''}
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
      ${transcriptPart(call)}</section>`;
}

/**
 * The stored transcript. While the call is up it is said in the live section above (stored only
 * at the end), so the page never claims that nothing was said of a call still going.
 */
function transcriptPart(call: Awaited<ReturnType<DashboardReads['call']>>): Html {
  if (call.transcription.length > 0)
    return html`<ol class="transcript">${call.transcription.map((t) => html`<li class="${t.role}"><strong>${t.role === 'assistant' ? 'Agent' : 'Contact'}</strong> ${t.content}</li>`)}</ol>`;
  if (call.status === 'ONGOING')
    return html`<p class="muted" id="transcript-note">The call is up: what is said appears under Live above.</p>`;
  return html`<p class="muted">Nothing was said.</p>`;
}

/** A turn figure in ms, or a dash for a stage that did not run. */
/** Whose failure a call was, as the call page says it. */
const FAILED_ON: Record<FailureSource, string> = {
  contact: "the callee's side",
  service: 'our side (not charged; a campaign contact keeps its attempt)',
};

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
