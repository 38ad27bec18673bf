import { describe, expect, it } from 'vitest';
import type { BatchTransactionEvents } from '../../src/services/batch-lifecycle.js';
import type { CallTransactionEvents } from '../../src/services/calls/lifecycle.js';
import {
  type DomainEventBus,
  type DomainEvents,
  EventBus,
  TransactionBus,
} from '../../src/services/events.js';
import { subscribeBatchReactions, subscribeCallReactions } from '../../src/wiring/subscribers.js';

interface Events {
  ended: { callId: string };
  sent: { callId: string; at: Date };
}

function logged() {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    logger: { error: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) },
  };
}

describe('EventBus', () => {
  it('runs the subscribers of an event in the order they subscribed, each to its end, and only those', async () => {
    const { logger } = logged();
    const bus = new EventBus<Events>(logger as never);
    const seen: string[] = [];
    bus.on('ended', 'first', async ({ callId }) => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(`first:${callId}`);
    });
    bus.on('ended', 'second', ({ callId }) => {
      seen.push(`second:${callId}`);
    });
    bus.on('sent', 'other', () => {
      seen.push('other');
    });
    await bus.emit('ended', { callId: 'call_1' });
    expect(seen).toEqual(['first:call_1', 'second:call_1']);
    expect(bus.subscribersOf('ended')).toEqual(['first', 'second']);
  });

  it('logs a failing subscriber by name and still runs the ones after it', async () => {
    const { lines, logger } = logged();
    const bus = new EventBus<Events>(logger as never);
    const seen: string[] = [];
    bus.on('ended', 'broken', () => {
      throw new Error('cache down');
    });
    bus.on('ended', 'release', ({ callId }) => {
      seen.push(callId);
    });
    await bus.emit('ended', { callId: 'call_2' });
    expect(seen).toEqual(['call_2']);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toMatchObject({ event: 'ended', subscriber: 'broken' });
    expect(lines[0]?.fields.err).toMatchObject({ message: 'cache down' });
  });

  it('refuses a second subscriber with the same name on one event', () => {
    const bus = new EventBus<Events>(logged().logger as never);
    bus.on('ended', 'release', () => {});
    expect(() => bus.on('ended', 'release', () => {})).toThrow(
      'ended already has a subscriber named release',
    );
    bus.on('sent', 'release', () => {});
    expect(bus.subscribersOf('sent')).toEqual(['release']);
  });

  it('an event nobody subscribed to does nothing', async () => {
    const bus = new EventBus<Events>(logged().logger as never);
    await expect(bus.emit('sent', { callId: 'call_3', at: new Date() })).resolves.toBeUndefined();
  });
});

describe('TransactionBus', () => {
  it('runs the reactions of a write in order, and the first that throws stops the rest and fails the write', async () => {
    const bus = new TransactionBus<Events>();
    const seen: string[] = [];
    bus.on('ended', 'webhook', async ({ callId }) => {
      seen.push(`webhook:${callId}`);
    });
    bus.on('ended', 'batch-progress', async () => {
      throw new Error('lock timeout');
    });
    bus.on('ended', 'after', async () => {
      seen.push('after');
    });
    await expect(bus.run('ended', { callId: 'call_4' })).rejects.toThrow('lock timeout');
    expect(seen).toEqual(['webhook:call_4']);
    expect(bus.subscribersOf('ended')).toEqual(['webhook', 'batch-progress', 'after']);
    expect(() => bus.on('ended', 'after', async () => {})).toThrow(
      'ended already has a subscriber named after',
    );
  });
});

describe('the wiring (src/wiring/subscribers.ts)', () => {
  it('subscribes every reaction to a batch transition by name, on the bus it must run on', () => {
    const events: DomainEventBus = new EventBus<DomainEvents>(logged().logger as never);
    const reactions = new TransactionBus<BatchTransactionEvents>();
    // Subscribing calls none of the reactions: the modules behind them are never reached here.
    subscribeBatchReactions(events, reactions, { batchReads: { forget: () => {} } });
    // In the transaction: the webhook commits with the status or not at all.
    expect(reactions.subscribersOf('batch.transitioned')).toEqual(['batch-webhook']);
    // After the commit: what only needs to see the change stored.
    expect(events.subscribersOf('batch.transitioned')).toEqual(['batch-status-snapshot']);
    expect(events.subscribersOf('call.ended')).toEqual([]);
  });

  it('subscribes the reactions to a call by name, the batch completion among them', () => {
    const events: DomainEventBus = new EventBus<DomainEvents>(logged().logger as never);
    const reactions = new TransactionBus<CallTransactionEvents>();
    subscribeCallReactions(events, reactions, {} as never);
    expect(reactions.subscribersOf('calls.progressing')).toEqual(['call-progress-webhook']);
    expect(reactions.subscribersOf('calls.ending')).toEqual([
      'analysis',
      'call-completed-webhook',
      'batch-progress',
    ]);
    expect(events.subscribersOf('call.opened')).toEqual(['live-view']);
    expect(events.subscribersOf('call.sent')).toEqual(['live-view']);
    expect(events.subscribersOf('call.ended')).toEqual([
      'metrics',
      'live-view',
      'live-call-followers',
      'dispatcher-release',
      'breaker-evidence',
      'ai-place-release',
    ]);
    expect(events.subscribersOf('batch.transitioned')).toEqual([]);
  });
});
