import type { Logger } from 'pino';
import type { CallEndedEvent } from '../ports.js';

/**
 * What happens to a call, as its owners announce it once it is stored. Each reaction is a named
 * subscriber, registered in `src/wiring/subscribers.ts`; the writes themselves stay with their
 * owner (`services/calls/lifecycle.ts`), in the transaction that makes them.
 */
export interface CallEvents {
  /** A single or web call was opened: its row and dial record are committed (`CallIntake`). */
  'call.opened': { callId: string; userId: string; contact: { id: string; phone_number: string }; at: Date };
  /** A call went out later than it was opened or announced (SIP: after its wait for the trunk). */
  'call.sent': { callId: string; at: Date };
  /**
   * A call's end, from any source (its provider, a refused dial, the reconciler), after
   * `CallLifecycle.finish` applied it. `recorded` is false when that write failed: the
   * reconciler settles the call later, and only the reactions that must not wait for it run.
   */
  'call.ended': { event: CallEndedEvent; recorded: boolean };
}

type Reaction<Payload> = (payload: Payload) => void | Promise<void>;

/**
 * A typed event bus for one process: `emit` runs every subscriber of the event in the order they
 * subscribed, each to its end, and resolves when all have run. A subscriber that throws is logged
 * under its name and does not stop the others.
 */
export class EventBus<Events extends object> {
  private readonly subscribers = new Map<keyof Events, Array<{ name: string; react: Reaction<never> }>>();

  constructor(private readonly logger: Pick<Logger, 'error'>) {}

  on<K extends keyof Events>(event: K, name: string, react: Reaction<Events[K]>): void {
    const list = this.subscribers.get(event) ?? [];
    if (list.some((subscriber) => subscriber.name === name)) {
      throw new Error(`${String(event)} already has a subscriber named ${name}`);
    }
    list.push({ name, react: react as Reaction<never> });
    this.subscribers.set(event, list);
  }

  async emit<K extends keyof Events>(event: K, payload: Events[K]): Promise<void> {
    for (const { name, react } of this.subscribers.get(event) ?? []) {
      try {
        await (react as Reaction<Events[K]>)(payload);
      } catch (error) {
        this.logger.error({ err: error, event, subscriber: name }, 'a subscriber failed');
      }
    }
  }

  /** The names subscribed to `event`, in the order they run. */
  subscribersOf(event: keyof Events): string[] {
    return (this.subscribers.get(event) ?? []).map((subscriber) => subscriber.name);
  }
}

export type CallEventBus = EventBus<CallEvents>;
