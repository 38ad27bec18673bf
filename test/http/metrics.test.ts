import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';

/** GET /metrics: Prometheus text, guarded by the admin token or an address allow-list. */
describe('metrics', () => {
  let t: TestApp;
  let alice: Account;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({ workers: true, env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    alice = await t.createAccount();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const scrape = () =>
    t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  /** The value of one series, or undefined. */
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  it('counts requests by route template and status, calls by outcome and analysis time', async () => {
    await t.request({ method: 'GET', url: '/api/v1/health', key: alice.key });
    await t.request({ method: 'GET', url: '/api/v1/status/call?callId=call_nope', key: alice.key });
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550121', agentConfigId: alice.agentId },
    });
    expect(dial.statusCode).toBe(200);
    const text = await eventually(async () => {
      const body = (await scrape()).body;
      return (value(body, 'outdial_calls_ended_total{status="COMPLETED"}') ?? 0) >= 1 &&
        (value(body, 'outdial_analysis_duration_seconds_count{analyzer="local"}') ?? 0) >= 1
        ? body
        : undefined;
    }, 10_000);
    expect(value(text, 'outdial_http_requests_total{method="GET",route="/api/v1/health",status="200"}')).toBe(
      1,
    );
    expect(
      value(text, 'outdial_http_requests_total{method="GET",route="/api/v1/status/call",status="404"}'),
    ).toBe(1);
    // Ids never become labels.
    expect(text).not.toContain('call_nope');
    expect(value(text, 'outdial_calls_dialed_total{kind="single"}')).toBe(1);
    expect(text).toContain(
      'outdial_http_request_duration_seconds_bucket{le="0.01",method="GET",route="/api/v1/health"}',
    );
    expect(value(text, 'outdial_dispatch_queue_depth')).toBe(0);
    expect(text).toContain('outdial_dispatcher_active_calls');
    expect(text).toContain('outdial_process_cpu_user_seconds_total');
  });

  it('passes `promtool check metrics` after real traffic, and keeps the usual process metrics', async () => {
    // A call that ends and calls back, so the call, analysis and webhook families have samples too.
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550122', agentConfigId: alice.agentId, statusCallBackUrl: receiver.url() },
    });
    expect(dial.statusCode).toBe(200);
    const text = await eventually(async () => {
      const body = (await scrape()).body;
      return (value(body, 'outdial_webhook_attempts_total{result="delivered"}') ?? 0) >= 1 ? body : undefined;
    }, 10_000);

    const check = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, stdout: check.stdout, stderr: check.stderr }).toEqual({
      status: 0,
      stdout: '',
      stderr: '',
    });

    // promtool reads only what is there: the families with no sample are listed, so one more left
    // empty is seen. The SIP ones need a trunk, the breaker ones a dependency that failed a call
    // (test/integration/breakers.test.ts), the ended reasons an AI agent's call, and a libuv
    // request (a file or DNS operation) is rarely in flight at the scrape. (Histograms always print
    // their buckets.)
    const families = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name = '', type]) => ({
      name,
      type,
    }));
    const series = new Set(text.split('\n').map((line) => /^[a-zA-Z0-9_:]+/.exec(line)?.[0]));
    const sampled = (name: string) => ['', '_bucket', '_count'].some((end) => series.has(`${name}${end}`));
    const inFlight = 'outdial_nodejs_active_requests';
    expect(families.filter((f) => !sampled(f.name) && f.name !== inFlight).map((f) => f.name)).toEqual([
      'outdial_sip_final_responses_total',
      'outdial_sip_trunk_calls',
      'outdial_breaker_state',
      'outdial_breaker_transitions_total',
      'outdial_agent_calls_ended_total',
    ]);
    // No gauge ends in _total (the three prom-client ones are dropped); their by-type gauges stay.
    expect(families.filter((f) => f.type !== 'counter' && f.name.endsWith('_total'))).toEqual([]);
    for (const family of [
      'outdial_process_cpu_user_seconds_total',
      'outdial_process_resident_memory_bytes',
      'outdial_process_start_time_seconds',
      'outdial_nodejs_eventloop_lag_seconds',
      'outdial_nodejs_heap_size_used_bytes',
      'outdial_nodejs_gc_duration_seconds',
      'outdial_nodejs_active_handles',
      'outdial_nodejs_active_resources',
    ]) {
      expect(sampled(family), family).toBe(true);
    }
  });

  it('refuses a scrape without the admin token, or with an API key', async () => {
    expect((await t.request({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const byKey = await t.request({ method: 'GET', url: '/metrics', key: alice.key });
    expect(byKey.statusCode).toBe(401);
    expect(byKey.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing admin token' });
  });

  it('lets an allow-listed address scrape without the token', async () => {
    const open = await startTestApp({ env: { OUTDIAL_METRICS_ALLOW: '10.0.0.7, 127.0.0.1' } });
    try {
      const res = await open.request({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/plain');
    } finally {
      await open.close();
    }
  });
});
