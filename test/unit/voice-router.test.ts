import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OfflineConversationEngine } from '../../src/adapters/voice/conversation.js';
import { RoutingVoiceProvider } from '../../src/adapters/voice/router.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { SipVoiceProvider } from '../../src/adapters/voice/sip/provider.js';
import type { CallEndedEvent, DialRequest } from '../../src/ports.js';

describe('routing calls between the simulator and SIP trunks', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-router-'));
  const simulator = new SimulatedVoiceProvider({ ringMs: 10, talkMs: 20 });
  const sip = new SipVoiceProvider({
    publicAddress: '127.0.0.1',
    bindAddress: '127.0.0.1',
    sipPort: 0,
    rtpPorts: [44100, 44199],
    dataDir,
    ringTimeoutMs: 1000,
    maxCallMs: 10_000,
    amd: true,
    trunk: async () => null,
    engine: new OfflineConversationEngine(),
  });
  const router = new RoutingVoiceProvider(simulator, sip);
  const ended: CallEndedEvent[] = [];
  router.onCallEnded(async (event) => {
    ended.push(event);
  });
  afterAll(async () => {
    await router.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const request = (callId: string, sipTrunkId: string | null, provider?: string): DialRequest => ({
    callId,
    to: '+14155550123',
    attempt: 1,
    agent: { id: 'agt_1', name: 'Agent', agentName: null, language: null, sipTrunkId, details: {} },
    contact: { id: 'cnt_1', name: 'Jordan' },
    ...(provider ? { provider } : {}),
  });

  it("sends a call where its agent's trunk says, and both report to the one handler", async () => {
    await router.dial(request('call_sim', null));
    await router.dial(request('call_sip', 'trk_gone'));
    await expect.poll(() => ended.map((e) => e.callId).sort()).toEqual(['call_sim', 'call_sip']);
    expect(simulator.dials.map((d) => d.callId)).toEqual(['call_sim']);
    expect(ended.find((e) => e.callId === 'call_sip')?.error).toContain('trk_gone');
  });

  it('asks the provider recorded on the call, even when the agent changed since', async () => {
    // Placed through a trunk, the agent has none now: only the SIP provider knows the call.
    expect(await router.lookup(request('call_lost', null, 'sip'), new Date())).toEqual({
      known: false,
      ended: null,
    });
    // The simulator rebuilds any call it is asked about.
    expect((await router.lookup(request('call_lost', null), new Date(0))).known).toBe(true);
  });

  it('serves a recording from the provider that made the call', async () => {
    const call = { id: 'call_x', duration: 3, transcription: [] };
    expect(await router.recording({ ...call, provider: 'sip' })).toBeNull();
    expect((await router.recording({ ...call, provider: 'simulator' }))?.contentType).toBe('audio/wav');
  });
});
