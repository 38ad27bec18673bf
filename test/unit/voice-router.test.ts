import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RoutingVoiceProvider } from '../../src/adapters/voice/router.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import type { CallEndedEvent, CallHolder, DialRecord } from '../../src/ports.js';
import {
  dialRequest,
  type TestSipProvider,
  testDialRecords,
  testSipProvider,
} from '../helpers/sip-provider.js';

describe('routing calls between the simulator and SIP trunks', () => {
  const simulator = new SimulatedVoiceProvider({ ringMs: 10, talkMs: 20 });
  let shared: Awaited<ReturnType<typeof testDialRecords>>;
  let sipProvider: TestSipProvider;
  let router: RoutingVoiceProvider;
  const ended: CallEndedEvent[] = [];
  beforeAll(async () => {
    shared = await testDialRecords();
    sipProvider = testSipProvider(null, shared.records, { ringTimeoutMs: 1000 });
    router = new RoutingVoiceProvider(simulator, sipProvider.sip);
    router.onCallEnded(async (event) => {
      ended.push(event);
    });
  });
  afterAll(async () => {
    await router?.close();
    await sipProvider?.dispose();
    await shared?.dispose();
  });

  it("sends a call where its agent's trunk says, and both report to the one handler", async () => {
    await router.dial(dialRequest('call_sim', null));
    await router.dial(dialRequest('call_sip', 'trk_gone'));
    await expect.poll(() => ended.map((e) => e.callId).sort()).toEqual(['call_sim', 'call_sip']);
    expect(simulator.dials.map((d) => d.callId)).toEqual(['call_sim']);
    // The name each call row records, so later reads (recording, reconciliation) find its provider.
    expect(router.nameFor(dialRequest('x', null).agent)).toBe('simulator');
    expect(router.nameFor(dialRequest('x', 'trk_1').agent)).toBe('sip');
    expect(ended.find((e) => e.callId === 'call_sip')?.error).toContain('trk_gone');
  });

  it('asks the provider recorded on the call, even when the agent changed since', async () => {
    // Placed through a trunk, the agent has none now: the SIP provider settles it from its record.
    const sentAt = new Date(Date.now() - 60_000);
    const record: DialRecord = {
      callId: 'call_lost',
      owner: 'gone',
      provider: 'sip',
      state: 'sent',
      createdAt: sentAt,
      sentAt,
      answeredAt: null,
      ended: null,
      ownerSeenAt: sentAt,
    };
    const viaSip = await router.lookup(dialRequest('call_lost', null, 'sip'), record);
    expect(viaSip.ended?.error).toContain('cut off');
    // The simulator rebuilds any call it is asked about.
    const viaSimulator = await router.lookup(dialRequest('call_lost', null), {
      ...record,
      provider: 'simulator',
    });
    expect(viaSimulator.ended?.error ?? '').not.toContain('cut off');
    expect(viaSimulator.known).toBe(true);
  });

  it('serves a recording from the provider that made the call', async () => {
    const call = { id: 'call_x', duration: 3, transcription: [] };
    expect(await router.recording({ ...call, provider: 'sip' })).toBeNull();
    expect((await router.recording({ ...call, provider: 'simulator' }))?.contentType).toBe('audio/wav');
  });

  it('never dials a call recorded with a holder that places nothing (a web call), and settles it there', async () => {
    const asked: string[] = [];
    const web: CallHolder = {
      name: 'web',
      onCallEnded: () => {},
      lookup: async (request) => {
        asked.push(request.callId);
        return { known: true, ended: null };
      },
      recording: async () => null,
      close: async () => {},
    };
    const withWeb = new RoutingVoiceProvider(simulator, sipProvider.sip, [web]);
    const before = simulator.dials.length;
    await expect(withWeb.dial(dialRequest('call_web', null, 'web'))).rejects.toThrow(
      'call call_web is a web call: it is never dialed',
    );
    expect(simulator.dials.length).toBe(before);
    const record: DialRecord = {
      callId: 'call_web',
      owner: 'gone',
      provider: 'web',
      state: 'sent',
      createdAt: new Date(),
      sentAt: new Date(),
      answeredAt: new Date(),
      ended: null,
      ownerSeenAt: new Date(),
    };
    expect(await withWeb.lookup(dialRequest('call_web', null, 'web'), record)).toEqual({
      known: true,
      ended: null,
    });
    expect(asked).toEqual(['call_web']);
  });
});
