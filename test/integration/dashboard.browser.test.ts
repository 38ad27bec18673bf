import fs from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { ARTIFACTS, CHROMIUM, checkPage } from '../helpers/browser.js';

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core): sign in, watch a
 * campaign finish, open a call, cancel a campaign, create and revoke a key. Each page is saved as
 * a screenshot under test/artifacts/ and checked by axe-core (WCAG and best practices, 0 violations).
 */
describe(`dashboard in a browser (${STORE})`, () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  let base: string;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    // Calls talk for 3 s, so a campaign has a moment with everyone dialed and calls still up.
    t = await startTestApp({
      workers: true,
      overrides: { dispatchTickMs: 50 },
      env: { OUTDIAL_SIM_TALK_MS: '3000' },
    });
    await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.runtime.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    alice = await t.createAccount({ minutes: 10_000 });
    bob = await t.createAccount({ minutes: 10_000 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The campaign's status badge once it reads `status` (the page updates it by itself). */
  const statusShown = (status: string) =>
    page.locator('[data-field="status"]', { hasText: new RegExp(`^${status}$`) });
  const shot = (name: string, options?: { fullPage?: boolean }) => checkPage(page, name, options);
  const api = (account: Account, url: string, body?: unknown) =>
    fetch(`${base}${url}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const createBatch = async (
    account: Account,
    count: number,
    rate: number,
    name: string | undefined,
    extra: Array<{ phoneNumber: string; name: string }> = [],
  ) => {
    const res = await api(account, '/api/v1/batch', {
      agentId: account.agentId,
      userId: account.userId,
      ...(name === undefined ? {} : { name }),
      contacts: [
        ...Array.from({ length: count }, (_, i) => ({
          phoneNumber: `+1415777${String(1000 + i + (rate === 1 ? 5000 : 0))}`,
          name: `Contact ${i}`,
        })),
        ...extra,
      ],
      // One attempt: a busy contact ends its campaign's part at once instead of waiting for a retry.
      options: { maxCallsPerSecond: rate, tags: ['browser'], retryStrategy: { maxAttempts: 1 } },
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { batchId: string }).batchId;
  };

  it('signs in with an API key; a wrong key is refused', async () => {
    await page.goto(`${base}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await shot('sign-in');
    // A favicon, served by outdial itself.
    const icon = await page.getAttribute('link[rel=icon]', 'href');
    const iconRes = await fetch(`${base}${icon}`);
    expect(iconRes.status).toBe(200);
    expect(iconRes.headers.get('content-type')).toContain('image/svg+xml');
    expect(await iconRes.text()).toContain('<svg');
    await page.fill('#apiKey', 'not-a-key');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('[role=alert]')).toContain('not valid');
    await page.fill('#apiKey', alice.key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard`);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'outdial_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect(await page.textContent('h1')).toBe('Campaigns');
    await shot('sign-in-done');
  });

  it('follows a running campaign live until it completes, with its chart, outcomes and calls', async () => {
    const batchId = await createBatch(alice, 12, 10, 'Browser run', [
      { phoneNumber: '+14157770001', name: 'Busy Contact' },
    ]);
    await createBatch(alice, 1, 10, undefined);
    await page.goto(`${base}/dashboard`);
    await expect.poll(() => page.textContent('table.batches')).toContain('Browser run');
    // The name given at creation everywhere; "Unknown" only for the batch created without one.
    const names = await page.$$eval('table.batches tbody tr td:first-child a', (links) =>
      links.map((a) => a.textContent),
    );
    expect(names.filter((n) => n === 'Browser run')).toHaveLength(1);
    expect(names.filter((n) => n === 'Unknown')).toHaveLength(1);
    await shot('campaigns');
    await page.click(`a[href="/dashboard/batches/${batchId}"]`);
    await page.waitForSelector('#batch');
    expect(await page.textContent('h1')).toBe('Browser run');
    expect(await page.title()).toContain('Browser run');
    // The figures that change by themselves are announced.
    for (const selector of ['[data-field="status"]', '[data-field="percent"]', 'dl.stats', '#outcomes'])
      expect(await page.getAttribute(selector, 'aria-live'), selector).toBe('polite');

    // No reload: the page's own polling moves it to completed. Until then the time left never
    // reads 0 (or nothing) while calls are up, including once every contact has been dialed.
    // Every state the page shows is recorded as it is drawn (a MutationObserver in the page), not
    // sampled: a short-lived state is seen however slowly the test runs beside it.
    await page.evaluate(`(() => {
      const take = () => window.outdialSamples.push({
        status: document.querySelector('[data-field="status"]').textContent,
        rows: document.querySelectorAll('#calls tr').length,
        processed: document.querySelector('[data-field="processed"]').textContent,
        eta: document.querySelector('[data-field="eta"]').textContent,
      });
      window.outdialSamples = [];
      take();
      new MutationObserver(take).observe(document.body, { subtree: true, childList: true, characterData: true });
    })()`);
    await statusShown('completed').waitFor({ timeout: 60_000 });
    const samples = (await page.evaluate('window.outdialSamples')) as Array<{
      status: string;
      rows: number;
      processed: string;
      eta: string;
    }>;
    expect(samples.at(-1)?.status).toBe('completed');
    const running = samples.filter((x) => x.status === 'processing' && x.rows > 0);
    expect(running.some((x) => x.rows === 13 && x.processed !== '13')).toBe(true);
    for (const sample of running) expect(sample.eta, JSON.stringify(sample)).not.toMatch(/^(—|0 s)$/);
    expect(await page.textContent('[data-field="processed"]')).toBe('13');
    expect(await page.textContent('[data-field="eta"]')).toBe('0 s');
    expect(await page.$('#chart canvas')).not.toBeNull();
    // The chart's axis starts at 0.
    expect(await page.getAttribute('#chart', 'data-y-range')).toMatch(/^0,/);
    // Outcomes say what they count: attempts.
    expect(await page.textContent('#outcomes-title')).toContain('attempts');
    expect(await page.textContent('#outcomes')).toContain('COMPLETED');
    expect(await page.textContent('#outcomes')).toContain('BUSY');
    await expect.poll(async () => (await page.$$('#calls tr')).length).toBe(13);
    // The busy call said nothing: no transcript to show; every answered call offers one.
    const busy = page.locator('#calls tr', { hasText: '+14157770001' });
    expect(await busy.locator('button').count()).toBe(0);
    expect(await busy.textContent()).toContain('None');
    expect(await page.$$('#calls button[data-transcript]')).toHaveLength(12);
    expect(await page.isVisible('#cancel-form')).toBe(false);
    await shot('campaign-completed');

    // Readable on a phone: nothing wider than the screen but the tables, which scroll in their box.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot('campaign-phone');
    await page.setViewportSize({ width: 1280, height: 900 });

    // A transcript on demand, in the list.
    await page.click('#calls button[data-transcript]');
    await page.waitForSelector('#calls .transcript-row .transcript li');
    expect(await page.textContent('#calls .transcript-row')).toContain('Agent');
    await shot('campaign-transcript');

    // A call, from the campaign's list; its breadcrumb names the campaign.
    await page
      .locator('#calls tr', { has: page.locator('button[data-transcript]') })
      .first()
      .locator('a')
      .click();
    await page.waitForSelector('.transcript, .muted');
    expect(await page.textContent('h1')).toContain('Call to Contact');
    expect(await page.textContent('#summary')).toMatch(/\S/);
    const crumb = page.locator(`nav.crumbs a[href="/dashboard/batches/${batchId}"]`);
    expect(await crumb.textContent()).toBe('Browser run');
    await shot('call');
  }, 60_000);

  it('draws idle seconds as 0, then cancels the campaign after asking for confirmation', async () => {
    const batchId = await createBatch(alice, 40, 1, 'Slow run');
    await page.goto(`${base}/dashboard/batches/${batchId}`);
    await expect
      .poll(async () => (await page.$$('#calls tr')).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(2);
    // Paused for 3 s: the seconds without a call are points at 0, between seconds with one.
    await page.click('#pause-form button');
    await statusShown('paused').waitFor();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const before = (await page.$$('#calls tr')).length;
    await page.click('#resume-form button');
    await expect
      .poll(async () => (await page.$$('#calls tr')).length, { timeout: 10_000 })
      .toBeGreaterThan(before);
    const series = (await page.evaluate(
      `fetch('/dashboard/api/batches/${batchId}').then((res) => res.json()).then((data) => data.series)`,
    )) as Array<[number, number]>;
    series.forEach(([second], i) => {
      if (i > 0) expect(second).toBe((series[i - 1]?.[0] ?? 0) + 1);
    });
    const counts = series.map(([, count]) => count);
    const firstIdle = counts.indexOf(0);
    expect(firstIdle).toBeGreaterThan(0);
    expect(counts.slice(firstIdle).some((c) => c > 0)).toBe(true);
    await expect.poll(() => page.getAttribute('#chart', 'data-y-range')).toMatch(/^0,/);
    await shot('campaign-idle');

    let asked = '';
    page.once('dialog', async (dialog) => {
      asked = dialog.message();
      await dialog.accept();
    });
    await page.click('#cancel-form button');
    await statusShown('cancelled').waitFor();
    expect(asked).toContain('Cancel this campaign?');
    const status = await api(alice, `/api/v1/batch/check-status?batchId=${batchId}`);
    expect(((await status.json()) as { status: string }).status).toBe('cancelled');
    await shot('campaign-cancelled');
  }, 60_000);

  it('creates a key shown once, and revokes it', async () => {
    await page.goto(`${base}/api-keys`);
    // The webhook secret is not on the page until asked for.
    expect(await page.content()).not.toContain('whsec_');
    expect(await page.textContent('#secret')).toBe('Hidden');
    await shot('api-keys');
    await page.click('button[data-reveal="secret"]');
    await expect.poll(() => page.textContent('#secret')).toMatch(/^whsec_/);
    expect(await page.getAttribute('button[data-reveal="secret"]', 'aria-expanded')).toBe('true');
    expect(await page.isVisible('button[data-copy="secret"]')).toBe(true);
    await shot('api-keys-secret');

    // A key that works until the end of a day 30 days from now (UTC).
    const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const after = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    await page.fill('input[name=name]', 'Browser key');
    await page.fill('input[name=expiresOn]', day);
    await page.click('form.inline-form button');
    const key = (await page.textContent('#new-key'))?.trim() ?? '';
    expect(key.split('.')).toHaveLength(3);
    const works = await fetch(`${base}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } });
    expect(works.status).toBe(200);
    expect(
      await page.locator('tr', { hasText: 'Browser key' }).locator('[data-field="expiresAt"]').textContent(),
    ).toBe(`${after} 00:00:00 UTC`);
    await shot('api-keys-created');

    // The list never shows a key itself; revoke the new one.
    await page.goto(`${base}/api-keys`);
    expect(await page.content()).not.toContain(key);
    page.once('dialog', (dialog) => void dialog.accept());
    const row = page.locator('tr', { hasText: 'Browser key' });
    await row.locator('button.danger').click();
    await page.waitForURL(`${base}/api-keys`);
    expect(await page.locator('tr', { hasText: 'Browser key' }).textContent()).toContain('revoked');
    const refused = await fetch(`${base}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } });
    expect(refused.status).toBe(401);
    await shot('api-keys-revoked');
  });

  it('serves the API reference offline', async () => {
    await page.goto(`${base}/docs`);
    expect(await page.textContent('h1')).toContain('outdial');
    expect(await page.$$('section.op')).not.toHaveLength(0);
    await shot('docs', { fullPage: false });
  });

  it('lists single calls, each leading to its call page and back', async () => {
    const dialed = await api(alice, '/api/v1/call/dial', {
      agentConfigId: alice.agentId,
      to: '+14157779001',
      callerDetails: { name: 'Single Caller' },
    });
    expect(dialed.status).toBe(200);
    const { callId } = (await dialed.json()) as { callId: string };
    await page.goto(`${base}/dashboard/calls`);
    const row = page.locator(`a[href="/dashboard/calls/${callId}"]`);
    await row.waitFor();
    await shot('calls');
    await row.click();
    await page.waitForURL(new RegExp(`/dashboard/calls/${callId}$`));
    expect(await page.textContent('nav.crumbs')).toContain('Calls');
    await shot('single-call');
  });

  it("shows nothing of another user's, and signs out", async () => {
    const theirs = await createBatch(bob, 1, 5, 'Bob only');
    const res = await page.goto(`${base}/dashboard/batches/${theirs}`);
    expect(res?.status()).toBe(404);
    await page.goto(`${base}/dashboard`);
    expect(await page.textContent('main')).not.toContain('Bob only');
    await page.click('button.link');
    await page.waitForURL(/\/sign-in$/);
    await page.goto(`${base}/api-keys`);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await shot('signed-out');
  });
});
