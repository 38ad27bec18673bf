import { AppError } from '../../domain/errors.js';
import type { LiveControlService } from '../../services/live-control.js';
import type { App } from '../route-kit.js';
import { sseSink } from '../sse.js';
import { type Html, html } from './html.js';
import type { PageGuard } from './page-kit.js';

/**
 * The call page's live part (issue 17): while a call is up, its transcript as it is said (the
 * call's event stream) and Hang up / Transfer buttons. The dashboard is signed in with a cookie,
 * not an API key, so these routes call the live control service the API routes call, the POSTs
 * origin- and CSRF-checked like every dashboard form. Script: assets/live-call.js.
 */
export function registerLiveCallRoutes(
  app: App,
  live: LiveControlService,
  { sessions, signedIn }: Pick<PageGuard, 'sessions' | 'signedIn'>,
): void {
  app.get('/dashboard/api/calls/:callId/events', async (request, reply) => {
    const session = await signedIn(request, reply, true);
    if (!session) return reply;
    const callId = (request.params as { callId: string }).callId;
    try {
      const stop = await live.follow(
        session.userId,
        callId,
        sseSink(reply.raw, () => reply.hijack()),
      );
      reply.raw.on('close', stop);
      if (reply.raw.destroyed) stop();
      return reply;
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND')
        return reply.status(404).send({ error: 'Not Found' });
      throw error;
    }
  });

  for (const action of ['hangup', 'transfer', 'say'] as const) {
    app.post(`/dashboard/calls/:callId/${action}`, async (request, reply) => {
      const session = await signedIn(request, reply, true);
      if (!session) return reply;
      const form = (request.body ?? {}) as Record<string, string>;
      if (!sessions.checkCsrf(request, form._csrf)) {
        return reply.status(403).send({ error: 'Forbidden', message: 'This page expired: reload it' });
      }
      const callId = (request.params as { callId: string }).callId;
      try {
        const result = await liveAction(live, action, session.userId, callId, form);
        return reply.header('cache-control', 'no-store').send(result);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const status =
          error.code === 'NOT_FOUND'
            ? 404
            : error.code === 'CALL_NOT_LIVE'
              ? 409
              : error.code === 'LIVE_CALL_TIMEOUT'
                ? 504
                : error.code === 'INVALID_REQUEST'
                  ? 400
                  : 503;
        return reply.status(status).send({ error: error.code, message: error.message });
      }
    });
  }
}

/** One operator's action from the call page, through the service the API routes call. */
function liveAction(
  live: LiveControlService,
  action: 'hangup' | 'transfer' | 'say',
  userId: string,
  callId: string,
  form: Record<string, string>,
) {
  switch (action) {
    case 'hangup':
      return live.hangup(userId, callId);
    case 'transfer':
      return live.transfer(userId, callId, form.to ?? '');
    case 'say':
      return live.say(userId, callId, form.text ?? '');
  }
}

/** What the call page says of `say` before an agent takes lines (the script enables it). */
export const SAY_WAITING = 'Say works once the agent is talking with the person.';

/**
 * The call page's live section, shown while the call is ONGOING: its status and running duration
 * (from the answer, counted by the script), the transcript as it is said, and Hang up (every
 * ongoing call: a ringing one is cancelled), Say and Transfer (while an agent talks). A web call
 * has no line to refer elsewhere (its transport refuses transfers), so it offers no transfer.
 */
export function liveCallSection(
  call: { id: string; answeredAt: string | null },
  csrf: string,
  canTransfer = true,
): Html {
  return html`<section aria-labelledby="live-title" id="live-call" data-call-id="${call.id}" data-csrf="${csrf}"${call.answeredAt ? html` data-answered-at="${call.answeredAt}"` : ''}>
      <h2 id="live-title">Live</h2>
      <p><span data-field="liveStatus" class="muted">Connecting…</span> · <span data-field="liveDuration" aria-label="Time connected">${call.answeredAt ? '0 s' : 'not answered yet'}</span></p>
      <ol class="transcript" id="live-transcript" aria-live="polite"></ol>
      <form id="live-say" class="live-say"><label>Say <input name="text" maxlength="2000" required disabled aria-describedby="live-say-note"></label>
        <button type="submit" disabled>Say</button></form>
      <p class="muted" id="live-say-note">${SAY_WAITING}</p>
      <div class="actions">
        <button type="button" class="danger" id="live-hangup">Hang up</button>
        ${
          canTransfer
            ? html`<form id="live-transfer"><label>Transfer to <input name="to" placeholder="+14155550123 or sip:desk@pbx.example.com" required></label>
          <button type="submit">Transfer</button></form>`
            : ''
        }
      </div>
      <p role="status" id="live-result"></p>
      <script src="/dashboard/assets/live-call.js" defer></script>
    </section>`;
}
