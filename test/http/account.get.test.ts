import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/account', () => {
  let t: TestApp;
  let account: Account;
  let other: Account;
  beforeAll(async () => {
    // Calls stay up for a minute: the view is read while one is in progress.
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '60000' } });
    account = await t.createAccount({ minutes: 25 });
    other = await t.createAccount({ minutes: 7 });
    await t.admin('PATCH', `/admin/v1/users/${other.userId}`, { maxConcurrentCalls: 3 });
  });
  afterAll(() => t.close());

  const get = (key?: string, url = '/api/v1/account') => t.request({ method: 'GET', url, key });

  it("shows the key's user: balance, nothing reserved and no call up at first", async () => {
    const res = await get(account.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      userId: account.userId,
      availableMinutes: 25,
      reservedMinutes: 0,
      maxConcurrentCalls: 200,
      activeCalls: 0,
      defaultCountry: 'US',
    });
  });

  it('counts a call in progress and the minute it holds back', async () => {
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { agentConfigId: account.agentId, to: '+14155550123' },
    });
    expect(dial.statusCode).toBe(200);
    const view = await eventually(async () => {
      const body = (await get(account.key)).json();
      return body.activeCalls === 1 ? body : undefined;
    });
    expect(view).toEqual({
      userId: account.userId,
      availableMinutes: 25,
      reservedMinutes: 1,
      maxConcurrentCalls: 200,
      activeCalls: 1,
      defaultCountry: 'US',
    });
  });

  it("shows each user only their own account; another user's call is not counted", async () => {
    const res = await get(other.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      userId: other.userId,
      availableMinutes: 7,
      reservedMinutes: 0,
      maxConcurrentCalls: 3,
      activeCalls: 0,
      defaultCountry: 'US',
    });
  });

  it('answers 401 without a key or with a wrong one', async () => {
    for (const key of [undefined, 'not-a-key']) {
      const res = await get(key);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
    }
  });

  it('refuses a query parameter it does not take, such as another userId', async () => {
    const res = await get(account.key, `/api/v1/account?userId=${other.userId}`);
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(res.json())).not.toContain('"availableMinutes"');
  });

  it("is shown on the dashboard's main page, the signed-in user's own figures only", async () => {
    const form = await t.request({ method: 'GET', url: '/sign-in' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
    const cookie = (res: { headers: Record<string, unknown> }) =>
      ([res.headers['set-cookie']].flat().filter(Boolean) as string[])
        .map((line) => line.split(';')[0])
        .join('; ');
    const signIn = await t.request({
      method: 'POST',
      url: '/sign-in',
      headers: { cookie: cookie(form), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ apiKey: other.key, _csrf: csrf, next: '/dashboard' }).toString(),
    });
    expect(signIn.statusCode).toBe(303);
    const page = await t.request({ method: 'GET', url: '/dashboard', headers: { cookie: cookie(signIn) } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<dd data-field="availableMinutes">7</dd>');
    expect(page.body).toContain('<dd data-field="reservedMinutes">0</dd>');
    expect(page.body).toContain('<dd data-field="activeCalls">0 / 3</dd>');
  });

  it('is in the OpenAPI document with its errors', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const op = doc.paths['/api/v1/account'].get;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '500']));
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties)).toEqual([
      'userId',
      'availableMinutes',
      'reservedMinutes',
      'maxConcurrentCalls',
      'activeCalls',
      'defaultCountry',
    ]);
  });
});
