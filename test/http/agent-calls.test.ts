import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json } from '../../src/adapters/postgres/database.js';
import { parseCsv } from '../../src/cli/csv.js';
import type { ToolCallRecord, TurnMetrics } from '../../src/domain/agent-call.js';
import { newId } from '../../src/domain/ids.js';
import { AgentEndProvider } from '../helpers/agent-provider.js';
import {
  type Account,
  ADMIN_TOKEN,
  dialStepsOn,
  eventually,
  startTestApp,
  type TestApp,
} from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * An AI call's agent side through the API: the {{variables}} a dial hands its call, and the
 * endedReason, turns and tool calls of its end in every view of the stored call (check-status,
 * get-metric, the call webhook) and in /metrics.
 */
describe('AI agent calls: variables, endedReason, turns and tool calls', () => {
  let t: TestApp;
  let provider: AgentEndProvider;
  let receiver: Receiver;
  let account: Account;
  const turns: TurnMetrics[] = [
    { endpointingMs: 510, sttMs: 120, llmFirstTokenMs: 160, ttsFirstByteMs: 90, voiceToVoiceMs: 900 },
    { endpointingMs: 480, sttMs: 110, llmFirstTokenMs: 150, ttsFirstByteMs: 85, voiceToVoiceMs: 1700 },
    { endpointingMs: 500, sttMs: null, llmFirstTokenMs: 140, ttsFirstByteMs: 80, voiceToVoiceMs: null },
  ];
  const toolCalls: ToolCallRecord[] = [
    {
      name: 'book_demo',
      arguments: { day: 'Tuesday' },
      result: { booked: true },
      error: null,
      at: '2026-01-05T10:00:03.000Z',
      durationMs: 42,
    },
    {
      name: 'end_call',
      arguments: {},
      result: null,
      error: null,
      at: '2026-01-05T10:00:09.000Z',
      durationMs: 1,
    },
  ];

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
      overrides: { dispatchTickMs: 50 },
      wrapProvider: (simulator) => {
        provider = new AgentEndProvider(simulator, () => ({ endedReason: 'agent-ended', turns, toolCalls }));
        return provider;
      },
    });
    account = await t.createAccount({ minutes: 1000 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const dial = (payload: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { agentConfigId: account.agentId, ...payload },
    });
  const stored = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json().data;
  const ended = (callId: string) =>
    eventually(async () => {
      const data = await stored(callId);
      return data.status === 'ONGOING' ? undefined : data;
    }, 10_000);

  it("hands the call the contact's fields, its metadata and the dial's variables, the dial's winning", async () => {
    const res = await dial({
      to: '+14155550123',
      callerDetails: { name: 'Ada Lovelace', company: 'Acme', metadata: { plan: 'gold', seats: 12 } },
      variables: { plan: 'platinum', orderId: 'A-17' },
    });
    expect(res.statusCode).toBe(200);
    const { callId } = res.json();
    expect(provider.request(callId)?.variables).toEqual({
      name: 'Ada Lovelace',
      contactName: 'Ada Lovelace',
      firstName: 'Ada',
      company: 'Acme',
      phoneNumber: '+14155550123',
      plan: 'platinum',
      seats: '12',
      orderId: 'A-17',
    });
    await ended(callId);
  });

  it('shows endedReason, turns, tool calls and the voice-to-voice summary in check-status and get-metric', async () => {
    const { callId, contactId } = (
      await dial({ to: '+14155550124', callerDetails: { name: 'Jordan' } })
    ).json();
    const data = await ended(callId);
    expect(data).toMatchObject({
      id: callId,
      status: 'COMPLETED',
      endedReason: 'agent-ended',
      turns,
      toolCalls,
      latency: { turns: 2, voiceToVoiceP50Ms: 900, voiceToVoiceP95Ms: 1700 },
    });
    // Tool calls are a list of their own: the transcription keeps the spec's role and content only.
    for (const entry of data.transcription) expect(Object.keys(entry).sort()).toEqual(['content', 'role']);
    const metric = await t.request({
      method: 'GET',
      url: `/api/v1/call/get-metric?callId=${callId}&agentId=${account.agentId}&contactId=${contactId}`,
      key: account.key,
    });
    expect(metric.statusCode).toBe(200);
    expect(metric.json().call).toMatchObject({
      id: callId,
      endedReason: 'agent-ended',
      turns,
      toolCalls,
      latency: { turns: 2, voiceToVoiceP50Ms: 900, voiceToVoiceP95Ms: 1700 },
    });
  });

  it('shows no endedReason, turns or tool calls for a call nobody answered', async () => {
    const { callId } = (await dial({ to: '+14155550002' })).json();
    const data = await ended(callId);
    expect(data).toMatchObject({
      status: 'NO_ANSWER',
      endedReason: null,
      // The callee's side, and nothing to charge.
      failureSource: 'contact',
      minutesCharged: 0,
      turns: [],
      toolCalls: [],
      latency: null,
    });
  });

  it('sends them in the call.completed webhook', async () => {
    const { callId } = (
      await dial({ to: '+14155550125', statusCallBackUrl: receiver.url('/agent-call') })
    ).json();
    const entry = await eventually(async () => receiver.on('/agent-call')[0], 15_000);
    expect(JSON.parse(entry.body)).toMatchObject({
      event: 'call.completed',
      call: { id: callId, endedReason: 'agent-ended', turns, toolCalls, latency: { turns: 2 } },
    });
  });

  it('observes the turns in Prometheus histograms and counts ended reasons', async () => {
    const scrape = async () =>
      (
        await t.request({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).body;
    const value = (text: string, series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    };
    const before = await scrape();
    const reasonsBefore = value(before, 'outdial_agent_calls_ended_total{reason="agent-ended"}');
    const v2vBefore = value(before, 'outdial_agent_voice_to_voice_seconds_count');
    const sttBefore = value(before, 'outdial_agent_stt_seconds_count');
    const { callId } = (await dial({ to: '+14155550126' })).json();
    await ended(callId);
    const after = await scrape();
    expect(value(after, 'outdial_agent_calls_ended_total{reason="agent-ended"}')).toBe(reasonsBefore + 1);
    // Two of the three turns measured voice-to-voice and STT; all three the others.
    expect(value(after, 'outdial_agent_voice_to_voice_seconds_count')).toBe(v2vBefore + 2);
    expect(value(after, 'outdial_agent_stt_seconds_count')).toBe(sttBefore + 2);
    for (const name of ['endpointing', 'llm_first_token', 'tts_first_byte']) {
      expect(value(after, `outdial_agent_${name}_seconds_count`)).toBeGreaterThanOrEqual(3);
    }
    expect(value(after, 'outdial_agent_voice_to_voice_seconds_bucket{le="1"}')).toBeGreaterThanOrEqual(1);
  });

  it("shows endedReason, the turns' figures and the tool calls on the dashboard's call page", async () => {
    const { callId } = (await dial({ to: '+14155550129', callerDetails: { name: 'Lin' } })).json();
    await ended(callId);
    // Sign in as a browser does: the form's CSRF token and cookie, then the session cookie.
    const form = await t.request({ method: 'GET', url: '/sign-in' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
    const cookie = (res: { headers: Record<string, unknown> }) =>
      ([res.headers['set-cookie']].flat().filter(Boolean) as string[])
        .map((line) => line.split(';')[0])
        .join('; ');
    const signIn = await t.request({
      method: 'POST',
      url: '/sign-in',
      headers: { cookie: cookie(form), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ apiKey: account.key, _csrf: csrf, next: '/dashboard' }).toString(),
    });
    expect(signIn.statusCode).toBe(303);
    const page = await t.request({
      method: 'GET',
      url: `/dashboard/calls/${callId}`,
      headers: { cookie: cookie(signIn) },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<dd data-field="endedReason">agent-ended</dd>');
    expect(page.body).toContain('p50 900 ms · p95 1700 ms');
    const rows = [...page.body.matchAll(/<tr><td>(\d+)<\/td>((?:<td>[^<]*<\/td>){5})<\/tr>/g)].map((m) =>
      [m[1], ...[...(m[2] ?? '').matchAll(/<td>([^<]*)<\/td>/g)].map((c) => c[1])].join(' '),
    );
    expect(rows).toEqual(['1 510 120 160 90 900', '2 480 110 150 85 1700', '3 500 — 140 80 —']);
    expect(page.body).toMatch(/<strong class="mono">book_demo<\/strong>/);
    expect(page.body).toContain('{&quot;day&quot;:&quot;Tuesday&quot;}');
    expect(page.body).toMatch(/<strong class="mono">end_call<\/strong>/);
  });

  it("hands a batch call its contact's company and metadata", async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: {
        agentId: account.agentId,
        userId: account.userId,
        contacts: [
          {
            phoneNumber: '+14155550127',
            name: 'Grace Hopper',
            company: 'Navy',
            metadata: { rank: 'Rear Admiral', 'favourite ship': 'USS Hopper' },
          },
        ],
      },
    });
    expect(res.statusCode).toBe(202);
    const request = await eventually(
      async () => provider.requests.find((r) => r.to === '+14155550127'),
      15_000,
    );
    expect(request.variables).toEqual({
      name: 'Grace Hopper',
      contactName: 'Grace Hopper',
      firstName: 'Grace',
      company: 'Navy',
      phoneNumber: '+14155550127',
      rank: 'Rear Admiral',
      'favourite ship': 'USS Hopper',
    });
    // The campaign's export shows the call's endedReason and voice-to-voice figures.
    const { batchId } = res.json();
    const lines = await eventually(async () => {
      const csv = await t.request({
        method: 'GET',
        url: `/api/v1/batch/${batchId}/export`,
        key: account.key,
      });
      // Read as CSV (RFC 4180): the analysis column, once filled, is quoted JSON holding commas.
      const rows = parseCsv(csv.body).map((record) => record.cells);
      return rows[1]?.includes('agent-ended') ? rows : undefined;
    }, 15_000);
    const header = lines[0] ?? [];
    const at = header.indexOf('endedReason');
    expect(header.slice(at, at + 4)).toEqual([
      'endedReason',
      'failureSource',
      'voiceToVoiceP50Ms',
      'voiceToVoiceP95Ms',
    ]);
    // Completed: nobody's failure.
    expect((lines[1] ?? []).slice(at, at + 4)).toEqual(['agent-ended', '', '900', '1700']);
  });

  it("hands a single call dialed again by reconciliation its stored variables, with the contact's", async () => {
    const db = t.runtime.database.db;
    const contactId = newId('cnt');
    await db
      .insertInto('contacts')
      .values({
        id: contactId,
        user_id: account.userId,
        phone_number: '+14155550130',
        name: 'Mary Jackson',
        email: null,
        company: 'NACA',
        metadata: json({ team: 'wind tunnel' }),
      })
      .execute();
    // Another process recorded the dial (with its variables) and died before it went out.
    const callId = newId('call');
    await db
      .insertInto('calls')
      .values({
        id: callId,
        user_id: account.userId,
        agent_id: account.agentId,
        contact_id: contactId,
        batch_id: null,
        status: 'ONGOING',
        phone_number: '+14155550130',
        provider: 'simulator',
        error: null,
        duration: null,
        transcription: json(null),
        summary: null,
        metric_json: json(null),
        status_callback_url: null,
        variables: json({ team: 'supersonic', visit: 'Friday' }),
        created_at: new Date(Date.now() - 60_000),
        answered_at: null,
        ended_at: null,
      })
      .execute();
    const owner = dialStepsOn(db);
    await owner.start();
    expect(await owner.hold(callId, 'simulator')).toBe(true);
    await owner.close();
    await sql`update dial_owners set lease_until = ${new Date(Date.now() - 5_000)} where id = ${owner.owner}`.execute(
      db,
    );
    await t.runtime.reconciler.reconcileStale();
    const request = await eventually(async () => provider.request(callId), 5000);
    expect(request.variables).toEqual({
      name: 'Mary Jackson',
      contactName: 'Mary Jackson',
      firstName: 'Mary',
      company: 'NACA',
      phoneNumber: '+14155550130',
      team: 'supersonic',
      visit: 'Friday',
    });
  });

  it.each([
    ['a value that is not a string', { n: 1 }, 'variables.n'],
    ['a name with a space', { 'bad name': 'x' }, 'variables'],
    ['a value over 1000 characters', { long: 'x'.repeat(1001) }, 'variables.long'],
    ['51 names', Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])), 'variables'],
  ])('refuses dial variables with %s, naming %s, and places no call', async (_label, variables, field) => {
    const before = provider.requests.length;
    const res = await dial({ to: '+14155550128', variables });
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors[field]).toBeDefined();
    expect(provider.requests.length).toBe(before);
  });
});
