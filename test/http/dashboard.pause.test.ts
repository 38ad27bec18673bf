import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** The campaign page's Pause and Resume buttons: shown by status, CSRF-guarded, scoped to the user. */
describe('dashboard pause and resume', () => {
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

  const scheduledBatch = async (account: Account) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: {
        agentId: account.agentId,
        userId: account.userId,
        contacts: [{ phoneNumber: '+14155558101' }],
        options: { scheduledStartTime: '2099-01-01T00:00:00Z' },
      },
    });
    const batchId = res.json().batchId as string;
    await eventually(async () => {
      const s = await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      });
      return s.json().status === 'scheduled' ? true : undefined;
    });
    return batchId;
  };
  const apiStatus = async (account: Account, batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      })
    ).json().status;

  // A control is on the page, shown or hidden (the page's script toggles it as the status changes).
  const shown = (body: string, control: string) => {
    const form = new RegExp(`<form[^>]*id="${control}-form"[^>]*>`).exec(body)?.[0];
    expect(form, `the ${control} form is on the page`).toBeDefined();
    return !/\shidden[\s>]/.test(form ?? '');
  };

  it('pauses and resumes a campaign from its page, one button at a time', async () => {
    const batchId = await scheduledBatch(alice);
    const browser = new Browser();
    await browser.signIn(alice.key);
    const page = await browser.get(`/dashboard/batches/${batchId}`);
    expect(shown(page.body, 'pause')).toBe(true);
    expect(shown(page.body, 'resume')).toBe(false);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';

    const paused = await browser.post(`/dashboard/batches/${batchId}/pause`, { _csrf: csrf });
    expect(paused.statusCode).toBe(303);
    expect(paused.headers.location).toBe(`/dashboard/batches/${batchId}`);
    expect(await apiStatus(alice, batchId)).toBe('paused');
    const pausedPage = await browser.get(`/dashboard/batches/${batchId}`);
    expect(shown(pausedPage.body, 'resume')).toBe(true);
    expect(shown(pausedPage.body, 'pause')).toBe(false);
    expect(shown(pausedPage.body, 'cancel')).toBe(true);

    // Without the CSRF token nothing changes.
    expect((await browser.post(`/dashboard/batches/${batchId}/resume`, {})).statusCode).toBe(403);
    expect(await apiStatus(alice, batchId)).toBe('paused');

    const resumed = await browser.post(`/dashboard/batches/${batchId}/resume`, { _csrf: csrf });
    expect(resumed.statusCode).toBe(303);
    expect(await apiStatus(alice, batchId)).toBe('scheduled');
  });

  it("cannot pause another user's campaign", async () => {
    const bobsBatch = await scheduledBatch(bob);
    const browser = new Browser();
    await browser.signIn(alice.key);
    const csrf = await browser.csrf('/dashboard');
    expect((await browser.post(`/dashboard/batches/${bobsBatch}/pause`, { _csrf: csrf })).statusCode).toBe(
      404,
    );
    expect(await apiStatus(bob, bobsBatch)).toBe('scheduled');
  });
});
