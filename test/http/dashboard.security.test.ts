import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** The dashboard's guards, at the HTTP level: sessions, CSRF, redirects, headers, tenant isolation. */
describe('dashboard security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  /** A browser's cookie jar over this app. */
  class Browser extends DashboardClient {
    constructor() {
      super(t);
    }
  }

  it('sends pages with a strict content security policy and no caching', async () => {
    const res = await new Browser().get('/sign-in');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('refuses a sign-in without its CSRF token, or from another site', async () => {
    const browser = new Browser();
    await browser.csrf();
    const without = await browser.post('/sign-in', { apiKey: alice.key });
    expect(without.statusCode).toBe(403);
    const csrf = await browser.csrf();
    const crossSite = await browser.post(
      '/sign-in',
      { apiKey: alice.key, _csrf: csrf },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.statusCode).toBe(403);
    expect(browser.cookies.has('outdial_session')).toBe(false);
  });

  it('only redirects back into the dashboard after sign-in', async () => {
    for (const next of [
      '//evil.example/x',
      'https://evil.example',
      '/dashboard/../../admin',
      'javascript:alert(1)',
    ]) {
      const res = await new Browser().signIn(alice.key, next);
      expect(res.statusCode, next).toBe(303);
      expect(res.headers.location, next).toBe('/dashboard');
    }
    const good = await new Browser().signIn(alice.key, '/api-keys');
    expect(good.headers.location).toBe('/api-keys');
  });

  it('needs a session for every page and for the live data', async () => {
    const browser = new Browser();
    for (const url of ['/dashboard', '/dashboard/batches/bat_x', '/dashboard/calls/call_x', '/api-keys']) {
      const res = await browser.get(url);
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location).toBe(`/sign-in?next=${encodeURIComponent(url)}`);
    }
    for (const url of ['/dashboard/api/batches/bat_x', '/dashboard/api/calls/call_x']) {
      expect((await browser.get(url)).statusCode, url).toBe(401);
    }
    // A forged cookie is no session.
    browser.cookies.set('outdial_session', 'eyJhbGciOiJIUzI1NiJ9.e30.x');
    expect((await browser.get('/dashboard')).statusCode).toBe(303);
  });

  it('refuses a state change without the CSRF token even when signed in', async () => {
    const browser = new Browser();
    await browser.signIn(alice.key);
    const res = await browser.post('/api-keys', { name: 'forged' });
    expect(res.statusCode).toBe(403);
    const keys = await t.admin('GET', `/admin/v1/keys?userId=${alice.userId}`);
    expect(JSON.stringify(keys.json())).not.toContain('forged');
  });

  it("shows a user nothing of another user's and cannot act on it", async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: bob.key,
      payload: {
        agentId: bob.agentId,
        userId: bob.userId,
        contacts: [{ phoneNumber: '+14155558001' }],
        options: { scheduledStartTime: '2099-01-01T00:00:00Z' },
      },
    });
    const bobsBatch = res.json().batchId as string;
    const browser = new Browser();
    await browser.signIn(alice.key);
    expect((await browser.get(`/dashboard/batches/${bobsBatch}`)).statusCode).toBe(404);
    expect((await browser.get(`/dashboard/api/batches/${bobsBatch}`)).statusCode).toBe(404);
    const bobsCall = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: bob.key,
      payload: { to: '+14155558002', agentConfigId: bob.agentId },
    });
    const bobsCallId = bobsCall.json().callId as string;
    expect((await browser.get(`/dashboard/api/calls/${bobsCallId}`)).statusCode).toBe(404);
    expect((await browser.get(`/dashboard/calls/${bobsCallId}`)).statusCode).toBe(404);
    const csrf = await browser.csrf('/dashboard');
    const cancel = await browser.post(`/dashboard/batches/${bobsBatch}/cancel`, { _csrf: csrf });
    expect(cancel.statusCode).toBe(404);
    const status = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${bobsBatch}`,
      key: bob.key,
    });
    expect(status.json().status).toBe('scheduled');
    const bobsKeys = await t.admin('GET', `/admin/v1/keys?userId=${bob.userId}`);
    const bobKeyId = (bobsKeys.json() as Array<{ id: string }>)[0]?.id ?? '';
    const revoke = await browser.post(`/api-keys/${bobKeyId}/revoke`, { _csrf: csrf });
    expect(revoke.statusCode).toBe(404);
    const bobStillWorks = await t.request({ method: 'GET', url: '/api/v1/health', key: bob.key });
    expect(bobStillWorks.statusCode).toBe(200);
  });

  it('ends the session when the key it was made with is revoked', async () => {
    const created = await t.admin('POST', '/admin/v1/keys', { userId: alice.userId, name: 'short-lived' });
    const { id, key } = created.json() as { id: string; key: string };
    const browser = new Browser();
    await browser.signIn(key);
    expect((await browser.get('/dashboard')).statusCode).toBe(200);
    await t.admin('DELETE', `/admin/v1/keys/${id}`);
    expect((await browser.get('/dashboard')).statusCode).toBe(303);
  });

  it('ends the session on the server at sign-out: a copy of the cookie is refused', async () => {
    const browser = new Browser();
    await browser.signIn(bob.key);
    expect((await browser.get('/dashboard')).statusCode).toBe(200);
    const token = browser.cookies.get('outdial_session') ?? '';
    expect(token).not.toBe('');
    const sessions = () =>
      t.runtime.database.db
        .selectFrom('dashboard_sessions')
        .selectAll()
        .where('user_id', '=', bob.userId)
        .execute();
    // The server keeps the session, never the cookie's token itself.
    const [row] = await sessions();
    expect(row).toBeDefined();
    expect(JSON.stringify(row)).not.toContain(decodeURIComponent(token));

    const copy = new Browser();
    copy.cookies = new Map(browser.cookies);
    expect((await copy.get('/dashboard')).statusCode).toBe(200);

    const csrf = await browser.csrf('/dashboard');
    const out = await browser.post('/sign-out', { _csrf: csrf });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/sign-in');

    const page = await copy.get('/dashboard');
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/sign-in?next=%2Fdashboard');
    expect((await copy.get('/dashboard/api/calls/call_x')).statusCode).toBe(401);
    expect(await sessions()).toEqual([]);
  });
});
