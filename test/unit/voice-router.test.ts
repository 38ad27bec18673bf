import { afterAll, describe, expect, it } from 'vitest';
import { RoutingVoiceProvider } from '../../src/adapters/voice/router.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import type { CallEndedEvent } from '../../src/ports.js';
import { dialRequest, testSipProvider } from '../helpers/sip-provider.js';

describe('routing calls between the simulator and SIP trunks', () => {
  const simulator = new SimulatedVoiceProvider({ ringMs: 10, talkMs: 20 });
  const sipProvider = testSipProvider(null, { ringTimeoutMs: 1000 });
  const sip = sipProvider.sip;
  const router = new RoutingVoiceProvider(simulator, sip);
  const ended: CallEndedEvent[] = [];
  router.onCallEnded(async (event) => {
    ended.push(event);
  });
  afterAll(async () => {
    await router.close();
    await sipProvider.dispose();
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
    // Placed through a trunk, the agent has none now: only the SIP provider knows the call.
    expect(await router.lookup(dialRequest('call_lost', null, 'sip'), new Date())).toEqual({
      known: false,
      ended: null,
    });
    // The simulator rebuilds any call it is asked about.
    expect((await router.lookup(dialRequest('call_lost', null), new Date(0))).known).toBe(true);
  });

  it('serves a recording from the provider that made the call', async () => {
    const call = { id: 'call_x', duration: 3, transcription: [] };
    expect(await router.recording({ ...call, provider: 'sip' })).toBeNull();
    expect((await router.recording({ ...call, provider: 'simulator' }))?.contentType).toBe('audio/wav');
  });
});
