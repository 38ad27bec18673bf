import fs from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { ARTIFACTS, CHROMIUM, checkPage } from '../helpers/browser.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * The settings, suppressions and webhooks pages in Chromium at a phone's width (390 px): axe-core
 * finds nothing on each, nothing is wider than the screen, the usage chart is drawn, a bad number is
 * refused next to its field, and a failed webhook replayed from its page is delivered.
 */
describe(`dashboard settings pages in a browser (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  let base: string;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true', OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: '50,50,50' },
      overrides: { dispatchTickMs: 50 },
    });
    await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.runtime.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    alice = await t.createAccount({ minutes: 1000 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  const fitsTheScreen = () =>
    expect.poll(() => page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  const deliveryOf = async (callId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/webhooks/deliveries?callId=${callId}`,
      key: alice.key,
    });
    return res.json<Array<{ id: string; status: string }>>()[0];
  };

  it('signs in and shows the settings: account, usage chart and table, the secret on demand', async () => {
    await page.goto(`${base}/dashboard/settings`);
    await page.fill('#apiKey', alice.key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard/settings`);
    expect(await page.textContent('h1')).toBe('Settings');
    await expect.poll(() => page.getAttribute('#usage-chart', 'data-drawn')).toBe('30');
    await page.click('button[data-reveal="secret"]');
    await expect.poll(() => page.textContent('#secret')).toMatch(/^whsec_/);
    await page.click('button[data-reveal="secret"]');
    await expect.poll(() => page.textContent('#secret')).toBe('Hidden');
    await fitsTheScreen();
    await checkPage(page, 'settings-390');
  });

  it('adds a number, shows a bad one refused next to its field, and passes axe', async () => {
    await page.click('nav >> text=Suppressions');
    await page.waitForURL(`${base}/dashboard/suppressions`);
    await page.fill('#phoneNumber', '+14155550301');
    await page.fill('#reason', 'asked in a letter');
    await page.click('form[action="/dashboard/suppressions"] button[type=submit]');
    await page.waitForSelector('tr[data-number="+14155550301"]');
    await page.fill('#phoneNumber', '12');
    await page.click('form[action="/dashboard/suppressions"] button[type=submit]');
    await page.waitForSelector('#phoneNumber-error');
    expect(await page.getAttribute('#phoneNumber', 'aria-invalid')).toBe('true');
    await fitsTheScreen();
    await checkPage(page, 'suppressions-390');
  });

  it('replays a failed webhook from its page and sees it delivered', async () => {
    receiver.respond = () => ({ status: 500 });
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550302', agentConfigId: alice.agentId, statusCallBackUrl: receiver.url('/down') },
    });
    expect(dial.statusCode, dial.body).toBe(200);
    const { callId } = dial.json<{ callId: string }>();
    const failed = await eventually(async () => {
      const delivery = await deliveryOf(callId);
      return delivery?.status === 'failed' ? delivery : undefined;
    }, 20_000);

    await page.click('nav >> text=Webhooks');
    await page.waitForURL(`${base}/dashboard/webhooks`);
    const row = page.locator(`tr[data-delivery-id="${failed.id}"]`);
    expect(await row.locator('[data-field="status"]').textContent()).toBe('failed');
    await fitsTheScreen();
    await checkPage(page, 'webhooks-390');

    receiver.respond = () => ({ status: 204 });
    const before = receiver.on('/down').length;
    await row.locator('button', { hasText: 'Replay' }).click();
    await page.waitForSelector('p.notice[role=status]');
    await eventually(async () => (receiver.on('/down').length > before ? true : undefined), 10_000);
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator(`tr[data-delivery-id="${failed.id}"] [data-field="status"]`).textContent();
        },
        { timeout: 10_000 },
      )
      .toBe('delivered');
    await checkPage(page, 'webhooks-replayed-390');
  });
});
