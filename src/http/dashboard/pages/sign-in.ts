import type { App } from '../../route-kit.js';
import { html, layout } from '../html.js';
import { type PageGuard, page } from '../page-kit.js';

/** Sign-in with an API key (exchanged for a session cookie), and sign-out. */
export function registerSignInPage(app: App, { sessions, checkForm }: PageGuard): void {
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
}

function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/(dashboard|api-keys)(\/[\w/-]*)?(\?[\w=&%-]*)?$/.test(next)
    ? next
    : '/dashboard';
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
