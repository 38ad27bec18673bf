import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLiveChannel } from '../../src/adapters/memory/live-channel.js';
import { CallHost } from '../../src/adapters/voice/call-host.js';
import { hostAddress, isOperatorHangup } from '../../src/domain/live-call.js';
import type { CallEndedEvent } from '../../src/ports.js';
import { testDialRecords } from '../helpers/sip-provider.js';

function ended(callId: string): CallEndedEvent {
  const at = new Date();
  return {
    callId,
    status: 'COMPLETED',
    duration: 3,
    answeredAt: at,
    endedAt: at,
    error: null,
    transcription: [],
    endedReason: 'agent-ended',
  };
}

describe('CallHost: the registry, stop and end report every transport shares', () => {
  let shared: Awaited<ReturnType<typeof testDialRecords>>;
  beforeAll(async () => {
    shared = await testDialRecords();
  });
  afterAll(async () => {
    await shared?.dispose();
  });

  it('holds a call once, keeps its end with the dial record before telling the consumer, and tells it once', async () => {
    const host = new CallHost({ label: 'test', records: shared.records });
    const told: Array<{ callId: string; kept: string | undefined }> = [];
    host.onCallEnded(async (event) => {
      told.push({ callId: event.callId, kept: (await shared.records.find(event.callId))?.state });
    });
    await shared.records.hold('call_host_1', 'test');
    expect(host.take('call_host_1')).not.toBeNull();
    expect(host.take('call_host_1')).toBeNull();
    expect(host.holds('call_host_1')).toBe(true);
    await Promise.all([host.report(ended('call_host_1')), host.report(ended('call_host_1'))]);
    expect(told).toEqual([{ callId: 'call_host_1', kept: 'ended' }]);
    expect(host.holds('call_host_1')).toBe(false);
    expect(host.size).toBe(0);
  });

  it('reports an end rebuilt from the number without keeping it, and sends a consumer failure to onError', async () => {
    const failures: string[] = [];
    const host = new CallHost({
      label: 'test',
      records: shared.records,
      onError: (error, event) => failures.push(`${event.callId}: ${(error as Error).message}`),
    });
    host.onCallEnded(async () => {
      throw new Error('database down');
    });
    await shared.records.hold('call_host_2', 'test');
    await host.report(ended('call_host_2'), { keep: false });
    expect((await shared.records.find('call_host_2'))?.state).toBe('waiting');
    expect(failures).toEqual(['call_host_2: database down']);
  });

  it('stops every held call on close, waits for their ends, and aborts a call taken after', async () => {
    const host = new CallHost({ label: 'test', closeWaitMs: 60_000 });
    const reported: string[] = [];
    host.onCallEnded(async (event) => {
      reported.push(event.callId);
    });
    const stop = host.take('call_host_3');
    if (!stop) throw new Error('not taken');
    host.running(
      'call_host_3',
      new Promise<void>((resolve) => {
        stop.signal.addEventListener('abort', () => void host.report(ended('call_host_3')).then(resolve));
      }),
    );
    await host.stopAll();
    expect(reported).toEqual(['call_host_3']);
    expect(host.closing).toBe(true);
    expect(host.take('call_host_4')?.signal.aborted).toBe(true);
  });

  it("takes an operator's hang-up for its calls at one address per host, naming the call, and refuses a call it does not hold", async () => {
    const live = new MemoryLiveChannel();
    const host = new CallHost({ label: 'test', live, records: shared.records });
    const address = hostAddress(shared.records.owner, 'test');
    // Nothing is served before the host holds a call.
    expect(await live.request(address, { action: 'hangup', callId: 'call_host_op' }, 1000)).toBe('not-live');
    const stop = host.take('call_host_op') as AbortController;
    // The transport ends the call when its stop is aborted, as the operator's.
    let operator = false;
    host.running(
      'call_host_op',
      new Promise<void>((resolve) =>
        stop.signal.addEventListener('abort', () => {
          operator = isOperatorHangup(stop.signal);
          resolve(host.report(ended('call_host_op')));
        }),
      ),
    );
    await expect
      .poll(() => live.request(address, { action: 'say', text: 'Hi.' }, 1000))
      .toMatchObject({ ok: false, outcome: 'refused' });
    expect(await live.request(address, { action: 'hangup', callId: 'call_host_op' }, 1000)).toEqual({
      ok: true,
      outcome: 'ended',
    });
    expect(operator).toBe(true);
    expect(host.holds('call_host_op')).toBe(false);
    // The call is gone: the host still answers at its address, and says it has ended.
    expect(await live.request(address, { action: 'hangup', callId: 'call_host_op' }, 1000)).toMatchObject({
      ok: false,
      outcome: 'refused',
    });
    await host.stopAll();
    expect(await live.request(address, { action: 'hangup', callId: 'call_host_op' }, 1000)).toBe('not-live');
  });
});
