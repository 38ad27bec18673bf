import { WEB_PROVIDER } from '../../domain/call.js';
import { AppError } from '../../domain/errors.js';
import type { WebCalls } from '../../ports.js';
import type { AgentService, AgentView } from '../../services/agents.js';
import type { CallIntake } from '../../services/calls/intake.js';
import type { App } from '../route-kit.js';
import { formatDate, type Html, html, layout } from './html.js';
import { type PageGuard, page } from './page-kit.js';
import type { DashboardSession } from './session.js';

/**
 * The agents pages and "Talk to this agent" (issue 17): `/dashboard/agents` lists the user's
 * agents, `/dashboard/agents/:agentId` shows one (read-only) with the Talk button, and
 * `GET /dashboard/agents/:agentId/talk` is the WebSocket a web call runs on (docs/agents.md §10).
 * The socket is refused before the upgrade without a session (401) or from another origin (403:
 * a page of another site must not open calls with the user's cookie); once upgraded, a call that
 * cannot start is closed with a 44xx code and the reason the page shows.
 */

/** The largest message a client may send: 64 KB, 4 s of audio (a browser sends 320-byte frames). */
export const TALK_MAX_PAYLOAD = 64 * 1024;

/** Close codes of a call that could not start, in the 4000-4999 range for applications (RFC 6455). */
const REFUSALS: Partial<Record<AppError['code'], number>> = {
  AGENT_NOT_FOUND: 4404,
  INSUFFICIENT_CREDITS: 4402,
  CONCURRENCY_LIMIT: 4429,
  CALL_IN_PROGRESS: 4409,
};

export interface TalkServices {
  agents: AgentService;
  calls: CallIntake;
  webCalls: WebCalls;
}

export function registerTalkRoutes(
  app: App,
  services: TalkServices,
  { sessions, signedIn, notFound }: PageGuard,
): void {
  app.get('/dashboard/agents', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const agents = await services.agents.list(session.userId);
    return page(reply, 200, layout({ title: 'Agents', csrf, active: 'agents' }, agentsPage(agents)));
  });

  app.get('/dashboard/agents/:agentId', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const agent = await services.agents.getForUser(
      session.userId,
      (request.params as { agentId: string }).agentId,
    );
    if (!agent) return notFound(reply, csrf);
    return page(reply, 200, layout({ title: agent.name, csrf, active: 'agents' }, agentPage(agent)));
  });

  app.get(
    '/dashboard/agents/:agentId/talk',
    {
      websocket: true,
      // Decided before the upgrade: nothing of a call is opened for these.
      preValidation: async (request, reply) => {
        if (!sessions.sameOrigin(request)) {
          return reply
            .status(403)
            .send({ error: 'Forbidden', message: 'Open the call from outdial’s own page' });
        }
        const session = await signedIn(request, reply, true);
        if (!session) return reply;
        request.talkSession = session;
        return undefined;
      },
    },
    async (socket, request) => {
      const session = request.talkSession;
      if (!session) {
        socket.close(4401, 'sign in again');
        return;
      }
      const agentId = (request.params as { agentId: string }).agentId;
      let opened: Awaited<ReturnType<CallIntake['openWebCall']>>;
      try {
        opened = await services.calls.openWebCall(session.userId, agentId, WEB_PROVIDER);
      } catch (error) {
        const code = error instanceof AppError ? REFUSALS[error.code] : undefined;
        if (!(error instanceof AppError) || code === undefined) {
          request.log.error({ err: error }, 'could not open a web call');
          socket.close(1011, 'the call could not be opened; try again');
          return;
        }
        socket.close(code, refusalReason(error));
        return;
      }
      await services.webCalls.talk(opened.request, opened.answeredAt, socket);
    },
  );
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The dashboard session a web call's upgrade was signed in with (set before the upgrade). */
    talkSession?: DashboardSession;
  }
}

/** A refusal as the page shows it: close reasons are at most 123 bytes (RFC 6455 5.5). */
function refusalReason(error: AppError): string {
  const short: Partial<Record<AppError['code'], string>> = {
    AGENT_NOT_FOUND: 'this agent does not exist, is inactive or is not yours',
    INSUFFICIENT_CREDITS: 'no unreserved minute left: a call needs one',
    CONCURRENCY_LIMIT: 'your calls in progress are at your limit (maxConcurrentCalls)',
    CALL_IN_PROGRESS: 'a web call of yours is already in progress',
  };
  return short[error.code] ?? error.message.slice(0, 120);
}

function agentsPage(agents: AgentView[]): Html {
  return html`<h1>Agents</h1>
    ${
      agents.length === 0
        ? html`<p class="empty">No agents yet: an administrator creates them (outdial agents create).</p>`
        : html`<div class="table-wrap"><table class="agents">
      <thead><tr><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Language</th><th scope="col">Line</th><th scope="col">Created</th></tr></thead>
      <tbody>${agents.map(
        (agent) => html`<tr>
          <td><a href="/dashboard/agents/${agent.id}">${agent.name}</a><div class="muted mono">${agent.id}</div></td>
          <td>${agent.isActive ? 'Active' : 'Inactive'}</td>
          <td>${detail(agent, 'agentLanguage') ?? '—'}</td>
          <td>${agent.sipTrunkId ? html`SIP trunk <span class="mono">${agent.sipTrunkId}</span>` : 'Simulator'}</td>
          <td>${formatDate(agent.createdAt)}</td></tr>`,
      )}</tbody></table></div>`
    }`;
}

function agentPage(agent: AgentView): Html {
  const details = Object.entries(agent.basicDetails ?? {});
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/dashboard/agents">Agents</a> /</nav>
    <h1>${agent.name}</h1>
    <p><span class="muted mono">${agent.id}</span> · ${agent.isActive ? 'Active' : 'Inactive'} · ${agent.type}</p>
    ${agent.isActive ? talkSection(agent.id, agent.name) : html`<p class="muted">This agent is inactive: it cannot be talked to.</p>`}
    <section aria-labelledby="settings-title"><h2 id="settings-title">Settings</h2>
      <p class="muted">Read-only here; an administrator changes them (PATCH /admin/v1/agents/{agentId}).</p>
      <dl class="settings">${details.map(
        ([name, value]) =>
          html`<div><dt>${name}</dt><dd>${typeof value === 'string' ? value : html`<code>${JSON.stringify(value)}</code>`}</dd></div>`,
      )}
      <div><dt>SIP trunk</dt><dd>${agent.sipTrunkId ?? 'none (the simulator places its calls)'}</dd></div>
      </dl></section>`;
}

/**
 * The Talk button and its call panel (agent and campaign pages). Script: assets/talk.js, which
 * opens the WebSocket, sends the microphone (assets/talk-worklet.js) and plays the agent.
 */
export function talkSection(agentId: string, agentName: string): Html {
  return html`<section aria-labelledby="talk-title" class="talk" id="talk" data-agent-id="${agentId}">
      <h2 id="talk-title">Talk to ${agentName}</h2>
      <p class="muted">A call from this browser's microphone, held like a phone call: recorded, analysed and charged by the minute.</p>
      <div class="actions">
        <button type="button" id="talk-start">Talk to this agent</button>
        <button type="button" class="danger" id="talk-hangup" hidden>Hang up</button>
      </div>
      <p role="status" id="talk-status" class="muted">Not connected.</p>
      <ol class="transcript" id="talk-transcript" aria-live="polite" aria-label="Live transcript"></ol>
      <script src="/dashboard/assets/talk.js" defer></script>
    </section>`;
}

function detail(agent: AgentView, name: string): string | null {
  const value = (agent.basicDetails as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : null;
}
