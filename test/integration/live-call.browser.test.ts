import fs from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { ARTIFACTS, CHROMIUM, checkPage } from '../helpers/browser.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';

/**
 * The live call page in Debian's Chromium (issue 25 §7), on a simulated AI call: the LLM engine
 * talks with a persona callee, both on a local chat server. The persona's answers wait until the
 * test lets them go, so the call stays up while the page is looked at. Every wait is on a
 * condition on the page; the time limits only bound a failure.
 */
const FIRST = 'Hi Jordan, this is Ava from Acme.';
const SAID = 'Our spring offer ends on Friday.';

describe(`the live call page (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  let base: string;
  let browser: Browser;
  let page: Page;
  const held: Array<(line: string) => void> = [];

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) =>
        isPersona(record) ? new Promise<string>((resolve) => held.push(resolve)) : 'Tell me more.',
    });
    t = await startTestApp({ env: { ...simulatedAiEnv(chat), OUTDIAL_MODEL_TIMEOUT_MS: '60000' } });
    account = await t.createAccount();
    const agent = await t.admin('PATCH', `/admin/v1/agents/${account.agentId}`, {
      basicDetails: {
        agent_name: 'Ava',
        agentLanguage: 'en',
        firstMessage: FIRST,
        // No reprompt and no hang-up on silence: the call stays up while the persona waits.
        silence: { repromptMs: 0, hangupMs: 0 },
      },
    });
    expect(agent.statusCode, agent.body).toBe(200);
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (dialog) => void dialog.accept());
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    for (const release of held.splice(0)) release('Bye.');
    await browser?.close();
    await t?.close();
    await chat?.close();
  });

  const dial = async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to: '+14155550123', agentConfigId: account.agentId, callerDetails: { name: 'Jordan' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const bodyText = () => page.evaluate('document.body.innerText') as Promise<string>;
  const seconds = async () => {
    const text = (await page.textContent('[data-field="liveDuration"]')) ?? '';
    const match = /^(?:(\d+) min )?(\d+) s$/.exec(text.trim());
    return match ? Number(match[1] ?? 0) * 60 + Number(match[2]) : -1;
  };

  it('shows the lines as said, runs the duration, sends a say line, and hangs up', async () => {
    await page.goto(`${base}/sign-in?next=/dashboard/calls`);
    await page.fill('#apiKey', account.key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard/calls`);
    const callId = await dial();
    await page.goto(`${base}/dashboard/calls/${callId}`);

    const transcript = page.locator('#live-transcript');
    await transcript.locator('li.assistant', { hasText: FIRST }).waitFor({ timeout: 60_000 });
    expect(await bodyText()).not.toContain('Nothing was said');
    // The agent takes lines once it talks with the person: the Say box opens.
    await page.locator('#live-say input[name="text"]:enabled').waitFor({ timeout: 30_000 });
    expect(await page.isHidden('#live-say-note')).toBe(true);

    // The duration counts up from the answer while the call is up.
    const first = await eventually(async () => ((await seconds()) >= 0 ? seconds() : undefined), 10_000);
    await expect.poll(seconds, { timeout: 15_000 }).toBeGreaterThan(first);
    await checkPage(page, 'live-call');

    await page.fill('#live-say input[name="text"]', SAID);
    await page.click('#live-say button[type=submit]');
    await transcript.locator('li.assistant', { hasText: SAID }).waitFor({ timeout: 30_000 });
    expect(await page.inputValue('#live-say input[name="text"]')).toBe('');
    expect(await bodyText()).not.toContain('Nothing was said');

    // Usable on a phone: nothing wider than the screen, the controls reachable.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await checkPage(page, 'live-call-390');
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.click('#live-hangup');
    await page
      .locator('[data-field="liveStatus"]', { hasText: 'Ended: COMPLETED (operator-ended)' })
      .waitFor({ timeout: 30_000 });
    expect(await page.isDisabled('#live-hangup')).toBe(true);
    // The clock stopped at the call's stored duration.
    const stopped = await seconds();
    const stored = (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json().data;
    expect(stored).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
    expect(stopped).toBe(stored.duration);
    expect(await transcript.locator('li').count()).toBeGreaterThanOrEqual(2);
    expect(await bodyText()).not.toContain('Nothing was said');
  });
});
