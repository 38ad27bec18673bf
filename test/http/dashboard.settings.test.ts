import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * The settings, suppressions and webhooks pages (issue 25 §6): each for its signed-in user only,
 * every form behind the CSRF token, a bad number refused next to its field with nothing saved,
 * and a failed delivery replayed from the page.
 */
describe(`dashboard settings, suppressions and webhooks (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true', OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: '50,50,50' },
      overrides: { dispatchTickMs: 50 },
    });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount({ minutes: 1000 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const signedIn = async (account: Account) => {
    const browser = new DashboardClient(t);
    expect((await browser.signIn(account.key)).statusCode).toBe(303);
    return browser;
  };
  const listOf = async (account: Account) =>
    (await t.request({ method: 'GET', url: '/api/v1/suppressions?limit=1000', key: account.key })).json<
      Array<{ phoneNumber: string; reason: string | null }>
    >();
  const suppress = (account: Account, phoneNumber: string) =>
    t.request({ method: 'POST', url: '/api/v1/suppressions', key: account.key, payload: { phoneNumber } });
  const deliveries = async (account: Account, query = '') =>
    (await t.request({ method: 'GET', url: `/api/v1/webhooks/deliveries${query}`, key: account.key })).json<
      Array<{ id: string; status: string; url: string; attempts: number }>
    >();
  /** A call whose call.completed goes to `path`, and that delivery once it has settled. */
  const settledDelivery = async (account: Account, to: string, path: string) => {
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId, statusCallBackUrl: receiver.url(path) },
    });
    expect(dial.statusCode, dial.body).toBe(200);
    const { callId } = dial.json<{ callId: string }>();
    return eventually(async () => {
      const [delivery] = await deliveries(account, `?callId=${callId}`);
      return delivery && delivery.status !== 'pending' ? delivery : undefined;
    }, 20_000);
  };

  it('answers each page to its signed-in user, and sends anyone else to sign in', async () => {
    const browser = await signedIn(alice);
    for (const url of ['/dashboard/settings', '/dashboard/suppressions', '/dashboard/webhooks']) {
      const res = await browser.get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain(`href="${url}" aria-current="page"`);
      const anonymous = await new DashboardClient(t).get(url);
      expect(anonymous.statusCode).toBe(303);
      expect(anonymous.headers.location).toBe(`/sign-in?next=${encodeURIComponent(url)}`);
    }
  });

  it("shows the account's figures, 30 days of usage with the minutes charged, and the secret only on demand", async () => {
    receiver.respond = () => ({ status: 200 });
    await settledDelivery(alice, '+14155550171', '/usage');
    const browser = await signedIn(alice);
    const res = await browser.get('/dashboard/settings');
    const account = (await t.request({ method: 'GET', url: '/api/v1/account', key: alice.key })).json<{
      availableMinutes: number;
      maxConcurrentCalls: number;
    }>();
    expect(res.body).toContain(`data-field="availableMinutes">${account.availableMinutes}<`);
    expect(res.body).toContain(`data-field="maxConcurrentCalls">${account.maxConcurrentCalls} calls at once`);
    expect(res.body).toContain('data-field="reservedMinutes">');
    const days = [...res.body.matchAll(/<tr data-day="(\d{4}-\d{2}-\d{2})" data-minutes="(\d+)">/g)];
    expect(days).toHaveLength(30);
    expect(days.at(-1)?.[1]).toBe(new Date().toISOString().slice(0, 10));
    const charged = 1000 - account.availableMinutes;
    expect(charged).toBeGreaterThan(0);
    expect(days.reduce((sum, day) => sum + Number(day[2]), 0)).toBe(charged);
    expect(res.body).toContain('id="usage-chart"');
    expect(res.body).not.toContain('whsec_');
  });

  it('rotates the webhook secret with the CSRF token only', async () => {
    const browser = await signedIn(alice);
    const secretOf = async () =>
      (await t.admin('GET', `/admin/v1/users/${alice.userId}/webhook-secret`)).json<{ secret: string }>()
        .secret;
    const before = await secretOf();
    const forged = await browser.post('/dashboard/settings/webhook-secret/rotate', { _csrf: 'forged' });
    expect(forged.statusCode).toBe(403);
    expect(await secretOf()).toBe(before);
    const csrf = await browser.csrf('/dashboard/settings');
    const rotated = await browser.post('/dashboard/settings/webhook-secret/rotate', { _csrf: csrf });
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe('/dashboard/settings#webhook-secret');
    expect(await secretOf()).not.toBe(before);
  });

  it('adds a number, and refuses a bad one next to its field with nothing saved', async () => {
    const browser = await signedIn(alice);
    const csrf = await browser.csrf('/dashboard/suppressions');
    const added = await browser.post('/dashboard/suppressions', {
      _csrf: csrf,
      phoneNumber: '+14155550181',
      reason: 'asked by email',
    });
    expect(added.statusCode).toBe(303);
    const page = await browser.get(added.headers.location as string);
    expect(page.body).toContain('<strong>+14155550181</strong> is on your list now');
    expect(page.body).toMatch(/<tr data-number="\+14155550181">[\s\S]*?asked by email[\s\S]*?Added by hand/);

    const before = await listOf(alice);
    const refused = await browser.post('/dashboard/suppressions', {
      _csrf: csrf,
      phoneNumber: 'call me maybe',
      reason: 'typo',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(
      /id="phoneNumber"[^>]*value="call me maybe"[^>]*aria-invalid="true" aria-describedby="phoneNumber-error">\s*<span class="error field-error" id="phoneNumber-error">[^<]+<\/span>/,
    );
    expect(await listOf(alice)).toEqual(before);
  });

  it('refuses a form without the CSRF token and saves nothing', async () => {
    const browser = await signedIn(alice);
    const before = await listOf(alice);
    for (const [url, form] of [
      ['/dashboard/suppressions', { phoneNumber: '+14155550182' }],
      ['/dashboard/suppressions/import', { numbers: '+14155550183' }],
      ['/dashboard/suppressions/remove', { phoneNumber: '+14155550181' }],
    ] as const) {
      const res = await browser.post(url, form);
      expect(res.statusCode, url).toBe(403);
    }
    expect(await listOf(alice)).toEqual(before);
  });

  it('imports a list: counts added, already there and refused with the reason of each', async () => {
    const browser = await signedIn(alice);
    const csrf = await browser.csrf('/dashboard/suppressions');
    const res = await browser.post('/dashboard/suppressions/import', {
      _csrf: csrf,
      numbers: '+14155550191,Ann\n\n+14155550192\n+14155550181\nnot a number\n',
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-field="added">2<');
    expect(res.body).toContain('data-field="already">1<');
    expect(res.body).toContain('data-field="refused">1<');
    expect(res.body).toMatch(/<li>Line 5, <code>not a number<\/code>: [^<]+<\/li>/);
    const numbers = (await listOf(alice)).map((s) => s.phoneNumber);
    expect(numbers).toEqual(expect.arrayContaining(['+14155550191', '+14155550192']));

    const empty = await browser.post('/dashboard/suppressions/import', { _csrf: csrf, numbers: ' \n ' });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain('id="numbers-error"');
  });

  it('searches by number, with the message next to the box for a bad one', async () => {
    const browser = await signedIn(alice);
    const found = await browser.get('/dashboard/suppressions?number=%2B14155550191');
    expect(found.statusCode).toBe(200);
    expect([...found.body.matchAll(/<tr data-number="([^"]+)"/g)].map((m) => m[1])).toEqual(['+14155550191']);
    const missing = await browser.get('/dashboard/suppressions?number=%2B14155550199');
    expect(missing.body).toContain('That number is not on your list.');
    const bad = await browser.get('/dashboard/suppressions?number=abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('id="search-error"');
  });

  it("neither shows nor removes another user's suppression, and removes one's own", async () => {
    expect((await suppress(bob, '+14155550201')).statusCode).toBe(201);
    const browser = await signedIn(alice);
    const page = await browser.get('/dashboard/suppressions');
    expect(page.body).not.toContain('+14155550201');
    const search = await browser.get('/dashboard/suppressions?number=%2B14155550201');
    expect(search.body).not.toContain('data-number="+14155550201"');
    const csrf = await browser.csrf('/dashboard/suppressions');
    const others = await browser.post('/dashboard/suppressions/remove', {
      _csrf: csrf,
      phoneNumber: '+14155550201',
    });
    expect(others.statusCode).toBe(404);
    expect((await listOf(bob)).map((s) => s.phoneNumber)).toContain('+14155550201');

    const own = await browser.post('/dashboard/suppressions/remove', {
      _csrf: csrf,
      phoneNumber: '+14155550192',
    });
    expect(own.statusCode).toBe(303);
    expect((await listOf(alice)).map((s) => s.phoneNumber)).not.toContain('+14155550192');
  });

  it("replays a failed delivery from the log, and never another user's", async () => {
    receiver.respond = () => ({ status: 500 });
    const failed = await settledDelivery(alice, '+14155550172', '/down');
    const bobs = await settledDelivery(bob, '+14155550173', '/bob-down');
    expect(failed).toMatchObject({ status: 'failed', attempts: 4 });

    const browser = await signedIn(alice);
    const log = await browser.get('/dashboard/webhooks?status=failed');
    expect(log.body).toMatch(
      new RegExp(
        `<tr data-delivery-id="${failed.id}">[\\s\\S]*?failed[\\s\\S]*?data-field="attempts">4 <span class="muted">\\(HTTP 500\\)`,
      ),
    );
    expect(log.body).not.toContain(bobs.id);
    const csrf = await browser.csrf('/dashboard/webhooks');

    const noCsrf = await browser.post(`/dashboard/webhooks/${failed.id}/replay`, {});
    expect(noCsrf.statusCode).toBe(403);
    const others = await browser.post(`/dashboard/webhooks/${bobs.id}/replay`, { _csrf: csrf });
    expect(others.statusCode).toBe(404);
    expect((await deliveries(bob, '?status=failed')).map((d) => d.id)).toContain(bobs.id);

    receiver.respond = () => ({ status: 204 });
    const before = receiver.on('/down').length;
    const replay = await browser.post(`/dashboard/webhooks/${failed.id}/replay`, {
      _csrf: csrf,
      status: 'failed',
    });
    expect(replay.statusCode).toBe(303);
    expect(replay.headers.location).toBe(`/dashboard/webhooks?status=failed&replayed=${failed.id}`);
    await eventually(async () => (receiver.on('/down').length > before ? true : undefined), 10_000);
    const delivered = await eventually(async () => {
      const [row] = (await deliveries(alice)).filter((d) => d.id === failed.id);
      return row?.status === 'succeeded' ? row : undefined;
    }, 10_000);
    expect(delivered.attempts).toBe(1);
    const after = await browser.get('/dashboard/webhooks?status=succeeded');
    expect(after.body).toMatch(new RegExp(`<tr data-delivery-id="${failed.id}">[\\s\\S]*?delivered`));
  });
});
