import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../domain/errors.js';
import type { WebCalls } from '../../ports.js';
import type { AgentService } from '../../services/agents.js';
import type { BatchReads } from '../../services/batch-reads.js';
import type { BatchService } from '../../services/batches.js';
import type { CallIntake } from '../../services/calls/intake.js';
import type { CallReads } from '../../services/calls/reads.js';
import type { CallRecordings } from '../../services/calls/recordings.js';
import type { DashboardReads } from '../../services/dashboard.js';
import type { HealthService } from '../../services/health.js';
import type { KeyService } from '../../services/keys.js';
import type { LiveControlService } from '../../services/live-control.js';
import type { SuppressionService } from '../../services/suppressions.js';
import type { UserService } from '../../services/users.js';
import type { WebhookService } from '../../services/webhooks.js';
import { CSP, html, layout } from './html.js';
import type { DashboardSession, Sessions } from './session.js';

// What every dashboard page takes: its services, the HTML reply, and the session checks.

export interface DashboardServices {
  keys: KeyService;
  users: UserService;
  calls: CallIntake;
  recordings: CallRecordings;
  callReads: CallReads;
  agents: AgentService;
  batches: BatchService;
  batchReads: BatchReads;
  dashboard: DashboardReads;
  live: LiveControlService;
  webCalls: WebCalls;
  suppressions: SuppressionService;
  webhooks: WebhookService;
  /** The dependencies of a user's calls that are down (the banner). */
  health: Pick<HealthService, 'outages'>;
}

export type Form = Record<string, string>;

/** A read, or null when it names nothing of the user's (the page then answers 404 its own way). */
export async function orNotFound<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof AppError && error.code === 'NOT_FOUND') return null;
    throw error;
  }
}

export function page(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .send(body);
}

/** The session checks every page makes, built once from the dashboard's sessions. */
export interface PageGuard {
  sessions: Sessions;
  /** The session, or a redirect to sign-in (pages) / 401 (JSON). */
  signedIn(request: FastifyRequest, reply: FastifyReply, json?: boolean): Promise<DashboardSession | null>;
  /** The form, or a 403 page when its CSRF token is not this browser's. */
  checkForm(request: FastifyRequest, reply: FastifyReply): Form | null;
  notFound(reply: FastifyReply, csrf: string): FastifyReply;
}

export function pageGuard(sessions: Sessions): PageGuard {
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
  return { sessions, signedIn, checkForm, notFound };
}
