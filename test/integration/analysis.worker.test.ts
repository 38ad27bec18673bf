import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalAnalyzer } from '../../src/adapters/analysis/local.js';
import type { Analysis, AnalysisInput, Analyzer } from '../../src/domain/analysis.js';
import { type Account, eventually, startTestApp, type TestApp, TestClock } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';

/** An analyzer that fails as often as told before doing the real work. */
class FlakyAnalyzer implements Analyzer {
  readonly name = 'flaky';
  failuresLeft = 0;
  calls = 0;
  private readonly local = new LocalAnalyzer();
  async analyze(input: AnalysisInput): Promise<Analysis> {
    this.calls++;
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error('analyzer unavailable');
    }
    return this.local.analyze(input);
  }
}

/** The background analysis as durable work: retried after a failure, and never holding back a webhook for good. */
describe('analysis worker', () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  const clock = new TestClock();
  const analyzer = new FlakyAnalyzer();
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
      overrides: { clock, analyzer },
    });
    alice = await t.createAccount();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const dial = async (to: string, path: string) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to, agentConfigId: alice.agentId, statusCallBackUrl: receiver.url(path) },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const analysisOf = async (callId: string) =>
    t.runtime.database.db
      .selectFrom('calls')
      .select(['analysis_status', 'analysis_attempts', 'summary'])
      .where('id', '=', callId)
      .executeTakeFirstOrThrow();

  it('retries a failed analysis later, then sends the webhook with the summary', async () => {
    analyzer.failuresLeft = 1;
    const callId = await dial('+14155550191', '/retried');
    await eventually(async () => ((await analysisOf(callId)).analysis_attempts === 1 ? true : undefined));
    expect(receiver.on('/retried')).toHaveLength(0);
    // The retry is due 5 s after the failure.
    clock.advance(6_000);
    await eventually(async () => (receiver.on('/retried').length === 1 ? true : undefined));
    expect(await analysisOf(callId)).toMatchObject({ analysis_status: 'done', analysis_attempts: 2 });
    expect(JSON.parse(receiver.on('/retried')[0]?.body ?? '{}').call.summary).toMatch(/\S/);
  });

  it('after three failed attempts, sends the webhook without a summary', async () => {
    analyzer.failuresLeft = 3;
    const callId = await dial('+14155550192', '/given-up');
    await eventually(async () => ((await analysisOf(callId)).analysis_attempts === 1 ? true : undefined));
    clock.advance(6_000);
    await eventually(async () => ((await analysisOf(callId)).analysis_attempts === 2 ? true : undefined));
    clock.advance(11_000);
    await eventually(async () => (receiver.on('/given-up').length === 1 ? true : undefined));
    expect(await analysisOf(callId)).toMatchObject({
      analysis_status: 'failed',
      analysis_attempts: 3,
      summary: null,
    });
    expect(JSON.parse(receiver.on('/given-up')[0]?.body ?? '{}').call).toMatchObject({
      id: callId,
      summary: null,
      metricJson: null,
    });
  });
});
