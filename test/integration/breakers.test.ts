import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { exportedContacts, submitBatch } from '../helpers/calls.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { type ChatServer, simulatedAiEnv, startOutageChat } from '../helpers/model-servers.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * Issue 24 §3: the chat model goes down in the middle of a campaign. Its circuit breaker opens
 * after three service failures in a row; the campaign pauses itself (`dependency-unavailable`),
 * single dials are refused with 503, the health report and the metrics say so; the breaker's
 * probes (a real 1-token completion) find the model back, and the campaign resumes on its own.
 * Nothing is charged for the failures, no attempt is used, and every contact is completed once.
 */

interface BatchStatus {
  status: string;
  pauseReason: string | null;
  pausedDependency: string | null;
  throttle: { reason: string; dependency?: string } | null;
}
interface ListedCall {
  callId: string;
  phoneNumber: string;
  status: string;
  endedReason: string | null;
  failureSource: string | null;
}
interface HealthDependency {
  key: string;
  kind: string;
  status: string;
  breaker: string;
  since: string | null;
  lastError: string | null;
}

describe(`circuit breakers (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  let receiver: Receiver;
  let setDown: (down: boolean) => void = () => {};
  /** The breaker's probes: the only chat requests that ask for one token. */
  const probes = () => chat.requests.filter((record) => record.body.max_tokens === 1).length;

  beforeAll(async () => {
    ({ chat, setDown } = await startOutageChat());
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: {
        ...simulatedAiEnv(chat),
        OUTDIAL_SERVICE_RETRY_MS: '200',
        OUTDIAL_BREAKER_PROBE_MS: '200',
        OUTDIAL_BREAKER_PROBE_MAX_MS: '400',
        OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    await t?.close();
    await chat?.close();
    await receiver?.close();
  });

  const dependency = () => `llm:${chat.url}`;
  const batchStatus = async (batchId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}`,
      key: account.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<BatchStatus>();
  };
  const callsOf = async (batchId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/calls?batchId=${batchId}&limit=100`,
      key: account.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<ListedCall[]>();
  };
  const charged = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json<{ data: { minutesCharged: number } }>().data.minutesCharged;
  const health = async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/health', key: account.key });
    return { code: res.statusCode, body: res.json<{ status: string; dependencies: HealthDependency[] }>() };
  };
  const balance = async () =>
    (await t.request({ method: 'GET', url: '/api/v1/account', key: account.key })).json<{
      availableMinutes: number;
    }>().availableMinutes;
  const contacts = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => ({ phoneNumber: `+1415555${String(from + i).padStart(4, '0')}` }));
  const hooksOf = (batchId: string, event: string) =>
    receiver.received
      .map((entry) => JSON.parse(entry.body) as Record<string, unknown>)
      .filter((body) => body.batchId === batchId && body.event === event);

  it('pauses a campaign after three failures, refuses single dials, and resumes it once a probe answers', async () => {
    const before = await balance();
    setDown(true);
    const batchId = await submitBatch(t, account, {
      contacts: contacts(6, 100),
      options: {
        maxCallsPerSecond: 2,
        retryStrategy: { maxAttempts: 1 },
        webhooks: { onBatchEvent: receiver.url() },
      },
    });

    const paused = await eventually(async () => {
      const status = await batchStatus(batchId);
      return status.status === 'paused' ? status : undefined;
    }, 30_000);
    expect(paused).toMatchObject({
      pauseReason: 'dependency-unavailable',
      pausedDependency: dependency(),
      throttle: { reason: 'dependency-unavailable', dependency: dependency() },
    });
    const failedBefore = await eventually(async () => {
      const calls = await callsOf(batchId);
      return calls.every((call) => call.status !== 'ONGOING') ? calls : undefined;
    }, 30_000);
    // The threshold's three, and at most the calls already placed when the third ended (2/s).
    expect(failedBefore.length).toBeGreaterThanOrEqual(3);
    expect(failedBefore.length).toBeLessThanOrEqual(6);
    for (const call of failedBefore) {
      expect(call).toMatchObject({
        status: 'FAILED',
        endedReason: 'model-unavailable',
        failureSource: 'service',
      });
      expect(await charged(call.callId)).toBe(0);
    }

    // No single call into the outage: 503 naming the model, nothing written.
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to: '+14155550999', agentConfigId: account.agentId },
    });
    expect(dial.statusCode, dial.body).toBe(503);
    expect(dial.json()).toMatchObject({
      code: 'DEPENDENCY_UNAVAILABLE',
      message: expect.stringContaining('llm test-model'),
      details: { dependency: dependency(), kind: 'llm', since: expect.any(String) },
    });
    const singles = await t.request({ method: 'GET', url: '/api/v1/calls?limit=100', key: account.key });
    expect(singles.json<ListedCall[]>().some((call) => call.phoneNumber === '+14155550999')).toBe(false);

    // The health report and the metrics name it.
    const report = await health();
    expect(report.code).toBe(503);
    expect(report.body.status).toBe('degraded');
    expect(report.body.dependencies).toContainEqual(
      expect.objectContaining({
        key: dependency(),
        kind: 'llm',
        status: 'down',
        breaker: expect.stringMatching(/^(open|half-open)$/),
        since: expect.any(String),
        lastError: expect.any(String),
      }),
    );
    const metrics = await t.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(metrics.body).toMatch(
      new RegExp(
        `outdial_breaker_state\\{dependency="${dependency().replace(/[/.:]/g, '\\$&')}",kind="llm"\\} [12]`,
      ),
    );
    // Opened once, and open again after each probe that failed.
    expect(metrics.body).toMatch(/outdial_breaker_transitions_total\{[^}]*kind="llm",to="open"\} [1-9]/);

    // The dashboard says so above the campaigns and on the campaign's page, naming it and since when.
    const browser = new DashboardClient(t);
    await browser.signIn(account.key);
    for (const url of ['/dashboard', `/dashboard/batches/${batchId}`]) {
      const page = await browser.get(url);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('data-field="outages"');
      expect(page.body).toMatch(
        /llm test-model at http:\/\/127\.0\.0\.1:\d+\/v1 is unavailable<\/strong> since /,
      );
    }

    // While the probes keep failing, nothing more is dialed.
    const probesSeen = probes();
    await eventually(async () => (probes() >= probesSeen + 2 ? true : undefined), 30_000);
    expect((await callsOf(batchId)).length).toBe(failedBefore.length);
    expect(hooksOf(batchId, 'batch.paused')).toEqual([
      expect.objectContaining({
        pauseReason: 'dependency-unavailable',
        dependency: dependency(),
        status: 'paused',
      }),
    ]);

    // The model is back: a probe answers, the breaker closes, the campaign resumes on its own.
    setDown(false);
    await eventually(
      async () => ((await batchStatus(batchId)).status === 'completed' ? true : undefined),
      60_000,
    );
    await eventually(async () => (hooksOf(batchId, 'batch.resumed').length > 0 ? true : undefined));
    expect(hooksOf(batchId, 'batch.resumed')).toEqual([
      expect.objectContaining({ pauseReason: 'dependency-unavailable', dependency: dependency() }),
    ]);
    const exported = await exportedContacts(t, account, batchId);
    expect(exported).toHaveLength(6);
    for (const contact of exported) {
      expect(contact).toMatchObject({ state: 'done', finalStatus: 'COMPLETED', attempts: '1' });
    }
    const calls = await callsOf(batchId);
    const completed = calls.filter((call) => call.status === 'COMPLETED');
    expect(completed).toHaveLength(6);
    expect(new Set(completed.map((call) => call.phoneNumber)).size).toBe(6);
    let paid = 0;
    for (const call of completed) paid += await charged(call.callId);
    expect(await balance()).toBe(before - paid);
    expect((await browser.get('/dashboard')).body).not.toContain('data-field="outages"');
    const after = await health();
    expect(after.body.dependencies).toContainEqual(
      expect.objectContaining({ key: dependency(), breaker: 'closed', status: 'up' }),
    );
  }, 150_000);

  it('keeps a batch its operator paused during an outage paused after the recovery, until the operator resumes it', async () => {
    setDown(true);
    const batchId = await submitBatch(t, account, {
      contacts: contacts(4, 200),
      options: { maxCallsPerSecond: 2, retryStrategy: { maxAttempts: 1 } },
    });
    await eventually(
      async () => ((await batchStatus(batchId)).pauseReason === 'dependency-unavailable' ? true : undefined),
      30_000,
    );
    const pause = await t.request({
      method: 'POST',
      url: `/api/v1/batch/pause?batchId=${batchId}`,
      key: account.key,
    });
    expect(pause.statusCode, pause.body).toBe(200);
    expect(await batchStatus(batchId)).toMatchObject({
      status: 'paused',
      pauseReason: 'operator',
      pausedDependency: null,
    });

    setDown(false);
    await eventually(async () => {
      const report = await health();
      return report.body.dependencies.some((d) => d.key === dependency() && d.breaker === 'closed')
        ? true
        : undefined;
    }, 30_000);
    expect(await batchStatus(batchId)).toMatchObject({ status: 'paused', pauseReason: 'operator' });

    const resume = await t.request({
      method: 'POST',
      url: `/api/v1/batch/resume?batchId=${batchId}`,
      key: account.key,
    });
    expect(resume.statusCode, resume.body).toBe(200);
    await eventually(
      async () => ((await batchStatus(batchId)).status === 'completed' ? true : undefined),
      60_000,
    );
    const exported = await exportedContacts(t, account, batchId);
    expect(exported.every((contact) => contact.finalStatus === 'COMPLETED' && contact.attempts === '1')).toBe(
      true,
    );
  }, 150_000);
});
