import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** The API keys page: a key's expiry set on the form, and the webhook secret given only when asked. */
describe('dashboard API keys page', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  const signedIn = async (account: Account) => {
    const browser = new DashboardClient(t);
    expect((await browser.signIn(account.key)).statusCode).toBe(303);
    return browser;
  };
  const keysOf = async (account: Account) =>
    (await t.admin('GET', `/admin/v1/keys?userId=${account.userId}`)).json().keys as Array<{
      name: string;
      expiresAt: string | null;
    }>;
  const day = (offsetDays: number) =>
    new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

  it('creates a key that works through the chosen day (UTC), and one that never expires', async () => {
    const browser = await signedIn(alice);
    const csrf = await browser.csrf('/api-keys');
    const chosen = day(10);
    const res = await browser.post('/api-keys', { _csrf: csrf, name: 'Ten days', expiresOn: chosen });
    expect(res.statusCode).toBe(201);
    const key = /<code id="new-key" class="secret">([^<]+)<\/code>/.exec(res.body)?.[1] ?? '';
    expect((await t.request({ method: 'GET', url: '/api/v1/health', key })).statusCode).toBe(200);
    const nextMidnight = new Date(Date.parse(`${chosen}T00:00:00.000Z`) + 86_400_000).toISOString();
    expect((await keysOf(alice)).find((k) => k.name === 'Ten days')?.expiresAt).toBe(nextMidnight);
    expect(res.body).toContain(`${nextMidnight.slice(0, 10)} 00:00:00 UTC`);

    const never = await browser.post('/api-keys', { _csrf: csrf, name: 'Forever', expiresOn: '' });
    expect(never.statusCode).toBe(201);
    expect((await keysOf(alice)).find((k) => k.name === 'Forever')?.expiresAt).toBeNull();
  });

  it('a key created for today works until midnight UTC', async () => {
    const browser = await signedIn(alice);
    const res = await browser.post('/api-keys', {
      _csrf: await browser.csrf('/api-keys'),
      name: 'Today only',
      expiresOn: day(0),
    });
    expect(res.statusCode).toBe(201);
    const expiresAt = (await keysOf(alice)).find((k) => k.name === 'Today only')?.expiresAt ?? '';
    expect(expiresAt).toBe(new Date(Date.parse(`${day(1)}T00:00:00.000Z`)).toISOString());
  });

  it('refuses a past day or a day that does not exist, on the page, and creates nothing', async () => {
    const browser = await signedIn(alice);
    const csrf = await browser.csrf('/api-keys');
    const before = (await keysOf(alice)).length;
    for (const [expiresOn, says] of [
      [day(-2), 'must be today or later'],
      ['2031-02-30', 'is not a date'],
      ['next week', 'is not a date'],
    ] as const) {
      const res = await browser.post('/api-keys', { _csrf: csrf, name: 'Refused', expiresOn });
      expect(res.statusCode, expiresOn).toBe(400);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toMatch(new RegExp(`role="alert">The key was not created: the expiry date ${says}`));
      expect(res.body).not.toContain('id="new-key"');
    }
    expect(await keysOf(alice)).toHaveLength(before);
  });

  it('keeps the webhook secret off the page, and gives it to the signed-in user who asks', async () => {
    const browser = await signedIn(alice);
    const page = await browser.get('/api-keys');
    expect(page.body).not.toContain('whsec_');
    const csrf = /data-csrf="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const res = await browser.get('/dashboard/api/webhook-secret', { 'x-csrf-token': csrf });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const own = (await t.admin('GET', `/admin/v1/users/${alice.userId}/webhook-secret`)).json().secret;
    expect(res.json()).toEqual({ secret: own });
    const bobs = (await t.admin('GET', `/admin/v1/users/${bob.userId}/webhook-secret`)).json().secret;
    expect(res.body).not.toContain(bobs);
  });

  it('gives the secret to no one without a session, and not without the CSRF header', async () => {
    const anonymous = await new DashboardClient(t).get('/dashboard/api/webhook-secret');
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.body).not.toContain('whsec_');
    // An API key is not a session: the page's JSON is for the signed-in browser only.
    const withKey = await t.request({ method: 'GET', url: '/dashboard/api/webhook-secret', key: alice.key });
    expect(withKey.statusCode).toBe(401);
    const browser = await signedIn(alice);
    for (const headers of [{}, { 'x-csrf-token': 'forged' }] as Array<Record<string, string>>) {
      const res = await browser.get('/dashboard/api/webhook-secret', headers);
      expect(res.statusCode).toBe(403);
      expect(res.body).not.toContain('whsec_');
    }
    // Another site's page cannot use the session either (its Origin is not ours).
    const csrf = /data-csrf="([^"]+)"/.exec((await browser.get('/api-keys')).body)?.[1] ?? '';
    const crossSite = await browser.get('/dashboard/api/webhook-secret', {
      'x-csrf-token': csrf,
      origin: 'https://evil.example',
    });
    expect(crossSite.statusCode).toBe(403);
  });

  it('names every column of the keys table', async () => {
    const browser = await signedIn(alice);
    const page = (await browser.get('/api-keys')).body;
    const headers = [...page.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]?.trim());
    expect(headers).toEqual(['Name', 'Created', 'Last used', 'Expires', 'Status', 'Action']);
  });
});
