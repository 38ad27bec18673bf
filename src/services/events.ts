import type { Logger } from 'pino';
import type { BatchStatus } from '../domain/batch.js';
import type { AnnouncedBatchEvent } from '../domain/batch-lifecycle.js';
import type { CallEndedEvent } from '../ports.js';
import type { EndedCall } from '../store/calls.js';

/** A call as its end left it: what the live view and the metrics show of it. */
export type { EndedCall };

/**
 * What happens to a call, as its owners announce it once it is stored. Each reaction is a named
 * subscriber, registered in `src/wiring/subscribers.ts`; the writes themselves stay with their
 * owner (`services/calls/lifecycle.ts`), in the transaction that makes them.
 */
export interface CallEvents {
  /** A single or web call was opened: its row and dial record are committed (`CallIntake`). */
  'call.opened': { callId: string; userId: string; contact: { id: string; phone_number: string }; at: Date };
  /**
   * A call went out: its dial record is sent at `at`, its recorded start (`DialSteps.send`, for
   * every transport that places calls).
   */
  'call.sent': { callId: string; at: Date };
  /** A call's first answer was recorded (`DialSteps.answered`): once per call, never on a repeat. */
  'call.answered': { callId: string; at: Date };
  /**
   * A call's end, from any source (its provider, a refused dial, the reconciler), after
   * `CallLifecycle.finish` applied it. `call` is the call as this end left it, or null when the end
   * changed nothing (a repeated report). `recorded` is false when the write failed: the
   * reconciler settles the call later, and only the reactions that must not wait for it run.
   */
  'call.ended': { event: CallEndedEvent; recorded: boolean; call: EndedCall | null };
}

/**
 * What happens to a batch, announced once the transaction that wrote it committed. Inside that
 * transaction the same change runs its `TransactionBus` reactions first (`BatchTransactionEvents`,
 * services/batch-lifecycle.ts): this one is for reactions that only need to see it stored.
 */
export interface BatchEvents {
  /**
   * A batch's status changed: `cause` is the lifecycle event (domain/batch-lifecycle.ts) and `to`
   * where it led. Every change of `batches.status`; the dispatcher's claim only when it moved the
   * batch to processing (see `AnnouncedBatchEvent`).
   */
  'batch.transitioned': {
    batchId: string;
    userId: string;
    cause: AnnouncedBatchEvent;
    to: BatchStatus;
    at: Date;
  };
}

/** Every event announced after its commit: one bus per process carries both. */
export type DomainEvents = CallEvents & BatchEvents;

type Reaction<Payload> = (payload: Payload) => void | Promise<void>;

/** Named subscribers per event, in the order they subscribed. */
class Subscribers<Events extends object> {
  private readonly subscribers = new Map<keyof Events, Array<{ name: string; react: unknown }>>();

  protected add(event: keyof Events, name: string, react: unknown): void {
    const list = this.subscribers.get(event) ?? [];
    if (list.some((subscriber) => subscriber.name === name)) {
      throw new Error(`${String(event)} already has a subscriber named ${name}`);
    }
    list.push({ name, react });
    this.subscribers.set(event, list);
  }

  protected of<K extends keyof Events, Fn>(event: K): Array<{ name: string; react: Fn }> {
    return (this.subscribers.get(event) ?? []) as Array<{ name: string; react: Fn }>;
  }

  /** The names subscribed to `event`, in the order they run. */
  subscribersOf(event: keyof Events): string[] {
    return this.of(event).map((subscriber) => subscriber.name);
  }
}

/**
 * A typed event bus for one process: `emit` runs every subscriber of the event in the order they
 * subscribed, each to its end, and resolves when all have run. A subscriber that throws is logged
 * under its name and does not stop the others.
 */
export class EventBus<Events extends object> extends Subscribers<Events> {
  constructor(private readonly logger: Pick<Logger, 'error'>) {
    super();
  }

  on<K extends keyof Events>(event: K, name: string, react: Reaction<Events[K]>): void {
    this.add(event, name, react);
  }

  async emit<K extends keyof Events>(event: K, payload: Events[K]): Promise<void> {
    for (const { name, react } of this.of<K, Reaction<Events[K]>>(event)) {
      try {
        await react(payload);
      } catch (error) {
        this.logger.error({ err: error, event, subscriber: name }, 'a subscriber failed');
      }
    }
  }
}

export type DomainEventBus = EventBus<DomainEvents>;

/**
 * Reactions that are part of a write: `run` calls them in order inside the transaction that makes
 * the change (their payload carries it), so each happens if and only if the change commits. One
 * that throws undoes the whole transaction, as if the write itself had failed.
 */
export class TransactionBus<Events extends object> extends Subscribers<Events> {
  on<K extends keyof Events>(event: K, name: string, react: (payload: Events[K]) => Promise<void>): void {
    this.add(event, name, react);
  }

  async run<K extends keyof Events>(event: K, payload: Events[K]): Promise<void> {
    for (const { react } of this.of<K, (payload: Events[K]) => Promise<void>>(event)) await react(payload);
  }
}
