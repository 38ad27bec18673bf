import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { ARTIFACTS, CHROMIUM, checkPage } from '../helpers/browser.js';
import { type ModelServers, startModelServers } from '../helpers/model-servers.js';

/**
 * "Talk to this agent" in Debian's Chromium with a fake microphone: a WAV of espeak-ng speech
 * (silence first, while the agent greets) that Chromium plays as the microphone, over and over.
 * The page sends it to outdial; the speech-to-text server transcribes it with pocketsphinx; the
 * chat server answers. The page's live transcript shows the callee's words as the server heard
 * them and the agent's reply; the call is then listed as web, recorded and charged.
 *
 * Nothing here depends on the machine's speed: the test waits for the lines on the page, and the
 * time limits are only bounds on a failure. Beside two CPU hogs pocketsphinx took 10.6 s for the
 * sentence (1.5 s alone), past the 10 s model timeout: the call then failed with the apology, so
 * the app gets a 60 s one here. The agent does not reprompt, so the microphone's silence before
 * the sentence can outlast a slow greeting, and the silence after it outlasts the call: the
 * sentence is said once, after the greeting.
 */

const SAID = 'I would like to hear about your offer';
const GREETING = 'Hello, this is Ava. How can I help you?';
const REPLY = 'We have ten percent off this week. Goodbye!';

describe(`Talk to this agent in a browser (${STORE})`, () => {
  let models: ModelServers;
  let t: TestApp;
  let account: Account;
  let base: string;
  let browser: Browser;
  let page: Page;
  let dir: string;

  beforeAll(async () => {
    models = await startModelServers({
      chat: {
        respond: (request) =>
          request.messages.some((message) => message.role === 'user')
            ? { text: REPLY, toolCalls: [{ name: 'end_call' }] }
            : GREETING,
      },
    });
    t = await startTestApp({ env: { ...models.env, OUTDIAL_MODEL_TIMEOUT_MS: '60000' } });
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    account = await t.createAccount({ minutes: 10 });
    // No reprompt and no hang-up on silence: the agent waits for the microphone's sentence.
    const patient = await t.admin('PATCH', `/admin/v1/agents/${account.agentId}`, {
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en', silence: { repromptMs: 0, hangupMs: 0 } },
    });
    expect(patient.statusCode, patient.body).toBe(200);
    // The microphone: 10 s of silence (the agent greets meanwhile: 3 to 8 s from the click here,
    // beside two CPU hogs), the sentence, then 60 s of silence (Chromium plays the file in a loop).
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-talk-browser-'));
    const speech = path.join(dir, 'speech.wav');
    const microphone = path.join(dir, 'microphone.wav');
    execFileSync('espeak-ng', ['-v', 'en-us', '-w', speech, SAID]);
    execFileSync('sox', [speech, '-r', '48000', '-c', '1', '-b', '16', microphone, 'pad', '10', '60']);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--autoplay-policy=no-user-gesture-required',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${microphone}`,
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await models?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const api = async <T>(url: string): Promise<T> =>
    (
      await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${account.key}` } })
    ).json() as Promise<T>;

  it('lists the agents, shows one, and talks with it from the microphone: both sides on the page, then the call is listed as web', async () => {
    await page.goto(`${base}/sign-in?next=/dashboard/agents`);
    await page.fill('#apiKey', account.key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard/agents`);
    expect(await page.textContent('h1')).toBe('Agents');
    expect(await page.getAttribute('nav a[href="/dashboard/agents"]', 'aria-current')).toBe('page');
    await checkPage(page, 'agents');
    await page.click(`a[href="/dashboard/agents/${account.agentId}"]`);
    await page.waitForSelector('#talk-start');
    await checkPage(page, 'agent');
    const before = (await api<{ availableMinutes: number }>('/api/v1/account')).availableMinutes;

    await page.click('#talk-start');
    const transcript = page.locator('#talk-transcript');
    // The callee's line is on the page once the speech-to-text server answered for the sentence,
    // and the call has ended once the agent's reply and its end_call tool are through.
    await transcript.locator('li.user').waitFor({ timeout: 90_000 });
    await page.locator('#talk-status', { hasText: 'Call ended' }).waitFor({ timeout: 60_000 });
    expect(await page.textContent('#talk-status')).toMatch(
      /^Call ended: COMPLETED \(agent-ended\), \d+ s\. /,
    );
    // What the speech-to-text server heard of the microphone is what the agent was told, and that
    // is the callee's line on the page, between the greeting and the reply.
    const told = [
      ...new Set(
        models.chat.requests
          .flatMap((request) => request.messages)
          .filter((message) => message.role === 'user')
          .map((message) => message.content),
      ),
    ];
    const heard = models.stt.requests.filter((request) => !request.aborted).map((request) => request.text);
    expect(told).toHaveLength(1);
    const said = String(told[0]);
    expect(said.trim()).not.toBe('');
    expect(heard).toContain(said);
    // The reply's line may reach the page just after the end's status on a loaded machine.
    await transcript.locator('li.assistant', { hasText: REPLY }).waitFor({ timeout: 10_000 });
    expect(await transcript.locator('li.assistant, li.user').allTextContents()).toEqual([
      `Agent ${GREETING}`,
      `You ${said}`,
      `Agent ${REPLY}`,
    ]);
    // The tool the agent ended the call with is shown too.
    expect(await transcript.locator('li.tool').allTextContents()).toEqual(['Tool: end_call']);
    expect(await page.getAttribute('#talk-transcript', 'aria-live')).toBe('polite');
    await checkPage(page, 'agent-talk-ended');

    const calls = await api<Array<{ callId: string; channel: string; status: string }>>('/api/v1/calls');
    const call = calls[0];
    expect(call).toMatchObject({ channel: 'web', status: 'COMPLETED' });
    const status = await api<{
      data: { recordingUrl: string | null; duration: number; transcription: unknown[] };
    }>(`/api/v1/call/check-status?callId=${call?.callId}`);
    expect(status.data.recordingUrl).toEqual(expect.any(String));
    const recording = await fetch(`${base}/api/v1/calls/${call?.callId}/recording.wav`, {
      headers: { authorization: `Bearer ${account.key}` },
    });
    expect(recording.status).toBe(200);
    const after = (await api<{ availableMinutes: number }>('/api/v1/account')).availableMinutes;
    expect(before - after).toBe(Math.ceil(status.data.duration / 60));
    // The call page opened from the talk panel's link names the channel.
    await page.click('#talk-status a');
    await page.waitForSelector('[data-field="channel"]');
    expect(await page.textContent('[data-field="channel"]')).toBe('Web (browser)');
    await checkPage(page, 'web-call');
  }, 180_000);

  it("offers the campaign's agent on the campaign page, and 404s another user's agent", async () => {
    const res = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        agentId: account.agentId,
        name: 'Talk campaign',
        contacts: [{ phoneNumber: '+14155550142', name: 'Sam' }],
      }),
    });
    const { batchId } = (await res.json()) as { batchId: string };
    await page.goto(`${base}/dashboard/batches/${batchId}`);
    await page.waitForSelector('#talk-start');
    expect(await page.getAttribute('#talk', 'data-agent-id')).toBe(account.agentId);
    await checkPage(page, 'campaign-talk');
    const other = await t.createAccount();
    const theirs = await page.goto(`${base}/dashboard/agents/${other.agentId}`);
    expect(theirs?.status()).toBe(404);
  });
});
