import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** A campaign's `name`: stored as given (trimmed), shown in every read and page; "Unknown" only without one. */
describe('batch name', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  const create = (account: Account, name?: unknown, key = account.key) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key,
      payload: {
        agentId: account.agentId,
        userId: account.userId,
        ...(name === undefined ? {} : { name }),
        contacts: [{ phoneNumber: '+14155550123', name: 'Jordan' }],
        options: { scheduledStartTime: new Date(Date.now() + 86_400_000).toISOString() },
      },
    });
  const created = async (account: Account, name?: string) => {
    const res = await create(account, name);
    expect(res.statusCode).toBe(202);
    return res.json().batchId as string;
  };
  const countOf = async (account: Account) =>
    ((await t.request({ method: 'GET', url: '/api/v1/batch/list', key: account.key })).json() as unknown[])
      .length;
  const status = (account: Account, batchId: string) =>
    t.request({ method: 'GET', url: `/api/v1/batch/check-status?batchId=${batchId}`, key: account.key });

  it('shows the given name in check-status, the list, the campaigns page and the campaign page', async () => {
    const batchId = await created(alice, '  Spring promo <b>  ');
    expect((await status(alice, batchId)).json().name).toBe('Spring promo <b>');
    const list = await t.request({ method: 'GET', url: '/api/v1/batch/list', key: alice.key });
    expect(list.json().find((b: { batchId: string }) => b.batchId === batchId)?.name).toBe(
      'Spring promo <b>',
    );
    const browser = new DashboardClient(t);
    await browser.signIn(alice.key);
    const campaigns = await browser.get('/dashboard');
    expect(campaigns.body).toContain(`<a href="/dashboard/batches/${batchId}">Spring promo &lt;b&gt;</a>`);
    const page = await browser.get(`/dashboard/batches/${batchId}`);
    expect(page.body).toContain('<h1>Spring promo &lt;b&gt;</h1>');
    expect(page.body).toContain('<title>Spring promo &lt;b&gt; · outdial</title>');
  });

  it('says "Unknown" only for a batch created without a name', async () => {
    const batchId = await created(alice);
    expect((await status(alice, batchId)).json().name).toBe('Unknown');
    const named = await created(alice, 'Unknown campaign');
    expect((await status(alice, named)).json().name).toBe('Unknown campaign');
  });

  it('refuses an empty or blank name with a 400 naming the field, and records nothing', async () => {
    const before = await countOf(alice);
    for (const name of ['', '   ', '\t\n']) {
      const res = await create(alice, name);
      expect(res.statusCode, JSON.stringify(name)).toBe(400);
      expect(Object.keys(res.json().details.fieldErrors)).toEqual(['name']);
    }
    const notText = await create(alice, 42);
    expect(notText.statusCode).toBe(400);
    expect(Object.keys(notText.json().details.fieldErrors)).toEqual(['name']);
    const after = await countOf(alice);
    expect(after).toBe(before);
  });

  it("never shows one user's campaign name to another, and needs a key", async () => {
    const batchId = await created(alice, 'Alice private');
    expect((await status(bob, batchId)).statusCode).toBe(404);
    const theirs = await t.request({ method: 'GET', url: '/api/v1/batch/list', key: bob.key });
    expect(theirs.body).not.toContain('Alice private');
    const browser = new DashboardClient(t);
    await browser.signIn(bob.key);
    expect((await browser.get('/dashboard')).body).not.toContain('Alice private');
    expect((await browser.get(`/dashboard/batches/${batchId}`)).statusCode).toBe(404);
    expect((await create(alice, 'No key', '')).statusCode).toBe(401);
  });
});
