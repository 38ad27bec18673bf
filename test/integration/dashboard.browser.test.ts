import fs from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/process.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(ROOT, 'test/artifacts');

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core): sign in, watch a
 * campaign finish, open a call, cancel a campaign, create and revoke a key. Each page is saved as
 * a screenshot under test/artifacts/.
 */
describe(`dashboard in a browser (${STORE})`, () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  let base: string;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
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
  const shot = (name: string) =>
    page.screenshot({ path: path.join(ARTIFACTS, `${STORE}-${name}.png`), fullPage: true });
  const api = (account: Account, url: string, body?: unknown) =>
    fetch(`${base}${url}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const createBatch = async (account: Account, count: number, rate: number, name: string) => {
    const res = await api(account, '/api/v1/batch', {
      agentId: account.agentId,
      userId: account.userId,
      name,
      contacts: Array.from({ length: count }, (_, i) => ({
        phoneNumber: `+1415777${String(1000 + i + (rate === 1 ? 5000 : 0))}`,
        name: `Contact ${i}`,
      })),
      options: { maxCallsPerSecond: rate, tags: ['browser'] },
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { batchId: string }).batchId;
  };

  it('signs in with an API key; a wrong key is refused', async () => {
    await page.goto(`${base}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
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
    const batchId = await createBatch(alice, 12, 10, 'Browser run');
    await page.goto(`${base}/dashboard`);
    await expect.poll(() => page.textContent('table.batches')).toContain('Browser run');
    await shot('campaigns');
    await page.click(`a[href="/dashboard/batches/${batchId}"]`);
    await page.waitForSelector('#batch');
    // No reload: the page's own polling moves it to completed.
    await statusShown('completed').waitFor({ timeout: 30_000 });
    expect(await page.textContent('[data-field="processed"]')).toBe('12');
    expect(await page.$('#chart canvas')).not.toBeNull();
    expect(await page.textContent('#outcomes')).toContain('COMPLETED');
    await expect.poll(async () => (await page.$$('#calls tr')).length).toBeGreaterThan(0);
    expect(await page.$('#cancel-form')).toBeNull();
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

    // A call, from the campaign's list.
    await page.click('#calls tr a');
    await page.waitForSelector('.transcript, .muted');
    expect(await page.textContent('h1')).toContain('Call to Contact');
    expect(await page.textContent('#summary')).toMatch(/\S/);
    await shot('call');
  });

  it('cancels a campaign after asking for confirmation', async () => {
    const batchId = await createBatch(alice, 40, 1, 'Slow run');
    await page.goto(`${base}/dashboard/batches/${batchId}`);
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
  });

  it('creates a key shown once, and revokes it', async () => {
    await page.goto(`${base}/api-keys`);
    await page.fill('input[name=name]', 'Browser key');
    await page.click('form.inline-form button');
    const key = (await page.textContent('#new-key'))?.trim() ?? '';
    expect(key.split('.')).toHaveLength(3);
    const works = await fetch(`${base}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } });
    expect(works.status).toBe(200);
    expect(await page.textContent('#secret')).toMatch(/^whsec_/);
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
    await shot('docs');
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
