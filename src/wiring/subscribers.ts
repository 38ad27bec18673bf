import type { LiveView } from '../services/calls/live-view.js';
import type { CallEventBus } from '../services/events.js';
import type { LiveControlService } from '../services/live-control.js';
import type { Dispatcher } from '../workers/dispatcher/index.js';

/** The modules that react to a call's events. */
export interface CallReactions {
  live: LiveView;
  liveControl: LiveControlService;
  dispatcher: Dispatcher;
}

/**
 * Every reaction to a call's events, by name, in the order each runs. This is the one place that
 * says what happens when a call opens, goes out or ends; the writes themselves (the call row, the
 * batch contact, the outbox's `call.completed`, the analysis due) are `CallLifecycle`'s, in the
 * transaction that records the step.
 */
export function subscribeCallReactions(
  events: CallEventBus,
  { live, liveControl, dispatcher }: CallReactions,
): void {
  // The live view shows a single or web call from the moment it is committed, and a call that
  // waited for its trunk from the moment it went out, as its row does.
  events.on('call.opened', 'live-view', ({ callId, userId, contact, at }) =>
    live.putNewSingleCall(callId, userId, contact, at),
  );
  events.on('call.sent', 'live-view', ({ callId, at }) => live.started(callId, at));
  // After the write: a follower of the call (the live stream, `say`) reads its final state.
  events.on('call.ended', 'live-call-followers', async ({ event, recorded }) => {
    if (recorded) await liveControl.callEnded(event);
  });
  // The dispatcher's place for the call is free, whether or not its end could be stored yet.
  events.on('call.ended', 'dispatcher-release', ({ event }) => dispatcher.released(event.callId));
}
