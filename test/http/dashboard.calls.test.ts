import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, completedBatch, dialCall } from '../helpers/calls.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** The dashboard's Calls page: the user's single calls, newest first, each linking to its call page. */
describe('dashboard: single calls', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  const singles: string[] = [];
  let batchCall: string;

  const dial = (account: Account, to: string, name: string) => dialCall(t, account, to, name);
  /** Call ids in the order the page lists them. */
  const listed = (body: string) => [...body.matchAll(/<tr data-call-id="([^"]+)">/g)].map((m) => m[1]);

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount();
    // One more than a page: ten at a time (the user's concurrent-call limit).
    for (let group = 0; group < 51; group += 10) {
      const ids: string[] = [];
      for (let i = group; i < Math.min(group + 10, 51); i++) {
        ids.push(await dial(alice, `+1415555${2000 + i}`, `Person ${i}`));
      }
      singles.push(...ids);
      await Promise.all(ids.map((id) => callEnded(t, alice, id)));
    }
    [batchCall = ''] = (await completedBatch(t, alice, [{ phoneNumber: '+14155557001' }])).callIds;
  }, 120_000);
  afterAll(() => t.close());

  it('lists the single calls newest first, 50 a page, each linking to its call page; campaign calls stay on their campaign', async () => {
    const browser = new DashboardClient(t);
    await browser.signIn(alice.key);
    const first = await browser.get('/dashboard/calls');
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('<a href="/dashboard/calls" aria-current="page">Calls</a>');
    const newest = [...singles].reverse();
    expect(listed(first.body)).toEqual(newest.slice(0, 50));
    expect(first.body).not.toContain(batchCall);
    expect(first.body).toContain(`<a href="/dashboard/calls/${newest[0]}">`);
    expect(first.body).toContain('Person 50');
    expect(first.body).toContain('+14155552050');
    expect(first.body).toContain('<span class="status status-COMPLETED">COMPLETED</span>');
    expect(first.body).not.toMatch(/<th[^>]*>\s*<\/th>/);

    const older = /<a href="(\/dashboard\/calls\?cursor=[^"]+)" rel="next">Older calls<\/a>/.exec(
      first.body,
    )?.[1];
    expect(older).toBe(`/dashboard/calls?cursor=${newest[49]}`);
    const second = await browser.get(older ?? '');
    expect(listed(second.body)).toEqual(newest.slice(50));
    expect(second.body).not.toContain('rel="next"');
    expect(second.body).toContain('<a href="/dashboard/calls">Newest calls</a>');

    // The call page of a single call marks Calls in the navigation.
    const callPage = await browser.get(`/dashboard/calls/${newest[0]}`);
    expect(callPage.statusCode).toBe(200);
    expect(callPage.body).toContain('<a href="/dashboard/calls" aria-current="page">Calls</a>');
    // Its breadcrumb leads back to the calls list; a campaign call's names its campaign instead.
    expect(callPage.body).toContain(
      '<nav class="crumbs" aria-label="Breadcrumb"><a href="/dashboard/calls">Calls</a> /</nav>',
    );
    const campaignCall = await browser.get(`/dashboard/calls/${batchCall}`);
    expect(campaignCall.body).not.toContain('<a href="/dashboard/calls">Calls</a> /</nav>');
    expect(campaignCall.body).toMatch(
      /<nav class="crumbs" aria-label="Breadcrumb"><a href="\/dashboard">Campaigns<\/a> \/ <a href="\/dashboard\/batches\//,
    );
  });

  it("shows another user none of these calls, and starts over on a cursor that is not the user's", async () => {
    const browser = new DashboardClient(t);
    await browser.signIn(bob.key);
    const page = await browser.get('/dashboard/calls');
    expect(page.statusCode).toBe(200);
    expect(listed(page.body)).toEqual([]);
    expect(page.body).toContain('No single calls yet');
    for (const cursor of [singles[10], 'call_unknown', '../x']) {
      const res = await browser.get(`/dashboard/calls?cursor=${encodeURIComponent(cursor ?? '')}`);
      if (cursor === '../x') {
        expect(res.statusCode).toBe(200);
        expect(listed(res.body)).toEqual([]);
      } else {
        expect(res.statusCode, cursor).toBe(303);
        expect(res.headers.location).toBe('/dashboard/calls');
      }
    }
    const mine = await dial(bob, '+14155550150', 'Bob contact');
    expect(listed((await browser.get('/dashboard/calls')).body)).toEqual([mine]);
  });

  it('sends a visitor without a session to sign in, and back here after', async () => {
    const res = await new DashboardClient(t).get('/dashboard/calls');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/sign-in?next=${encodeURIComponent('/dashboard/calls')}`);
  });
});
