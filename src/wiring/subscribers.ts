import { awaitsAnalysis } from '../domain/call.js';
import type { Metrics } from '../metrics.js';
import type { LoadGauge } from '../ports.js';
import {
  advanceBatchContacts,
  type BatchLifecycle,
  type BatchTransactionEvents,
} from '../services/batch-lifecycle.js';
import type { BatchReads } from '../services/batch-reads.js';
import { queueBatchWebhook } from '../services/batch-webhooks.js';
import type { AgentOfCall, Breakers } from '../services/breakers.js';
import { queueCallProgress } from '../services/call-events.js';
import { queueCallCompleted } from '../services/calls/completed.js';
import type { CallTransactionEvents } from '../services/calls/lifecycle.js';
import type { LiveView } from '../services/calls/live-view.js';
import type { DomainEventBus, TransactionBus } from '../services/events.js';
import type { LiveControlService } from '../services/live-control.js';
import type { RecordingLinks } from '../services/recording-links.js';
import type { Dispatcher } from '../workers/dispatcher/index.js';

/** The modules that react to a call's events. */
export interface CallReactions {
  live: LiveView;
  liveControl: LiveControlService;
  dispatcher: Dispatcher;
  /** Completes a batch whose last contact a call's end finished. */
  batchLifecycle: Pick<BatchLifecycle, 'finishIfDone'>;
  metrics: Metrics;
  links: RecordingLinks;
  /** The dependencies' circuit breakers, told what each call's end says of them. */
  breakers: Breakers;
  /** A call's agent as dialed, and whether a conversation engine holds its calls here. */
  agentOfCall: (agentId: string) => ReturnType<AgentOfCall>;
  /** OUTDIAL_SERVICE_RETRY_MS: the first wait of a campaign contact whose call failed on our side. */
  serviceRetryMs: number;
  /** This process's load: a call placed here holds an AI place until answered or ended. */
  load: Pick<LoadGauge, 'release'>;
}

/**
 * Every reaction to a call's events, by name, in the order each runs: the one place that says
 * what happens when a call opens, goes out or ends. The writes of the step itself (the call row,
 * the minutes charged) are `CallLifecycle`'s.
 */
export function subscribeCallReactions(
  events: DomainEventBus,
  reactions: TransactionBus<CallTransactionEvents>,
  {
    live,
    liveControl,
    dispatcher,
    batchLifecycle,
    metrics,
    links,
    breakers,
    agentOfCall,
    serviceRetryMs,
    load,
  }: CallReactions,
): void {
  // In the transaction that applies calls' ends, so each happens if and only if the end commits.
  // call.completed is queued before the batch's own completion, so the outbox sends them in order.
  // In the transaction that records a call's going out or first answer: its call.started or
  // call.answered webhook (a dial step opens a transaction only when the call has listeners).
  reactions.on('calls.progressing', 'call-progress-webhook', ({ tx, progress }) =>
    queueCallProgress(tx, progress),
  );
  // A call with words to analyse is due for its analysis (the analysis worker's) from its end.
  reactions.on('calls.ending', 'analysis', ({ tx, rows, events: ended, now }) =>
    tx.analysis.markDue(
      rows.filter((row) => awaitsAnalysis(ended.get(row.id) ?? { transcription: [] })).map((row) => row.id),
      now,
    ),
  );
  reactions.on('calls.ending', 'call-completed-webhook', (ending) => queueCallCompleted(ending, links));
  reactions.on('calls.ending', 'batch-progress', async ({ tx, rows, events: ended, batches, now }) => {
    const counted = await advanceBatchContacts(tx, batches, rows, ended, now, serviceRetryMs);
    for (const batch of counted) await batchLifecycle.finishIfDone(tx, batch.id, now, batch);
  });
  // The live view shows a single or web call from the moment it is committed, and a call that
  // waited for its trunk from the moment it went out, as its row does.
  events.on('call.opened', 'live-view', ({ callId, userId, contact, at }) =>
    live.putNewSingleCall(callId, userId, contact, at),
  );
  events.on('call.sent', 'live-view', ({ callId, at }) => live.started(callId, at));
  // After the commit: the metrics count the end, the live view shows it, a follower of the call
  // (the live stream, `say`) reads its final state, and the dispatcher's place for it is free
  // (whether or not its end could be stored yet).
  events.on('call.ended', 'metrics', ({ event, call }) => {
    if (!call) return;
    metrics.callsEnded.inc({ status: call.status });
    metrics.observeAgentCall(event);
  });
  events.on('call.ended', 'live-view', async ({ call }) => {
    if (call) await live.putLive(live.liveFromRow(call));
  });
  events.on('call.ended', 'live-call-followers', async ({ event, recorded }) => {
    if (recorded) await liveControl.callEnded(event);
  });
  events.on('call.ended', 'dispatcher-release', ({ event }) => dispatcher.released(event.callId));
  // A service failure counts against the dependency it names (three in a row open its breaker);
  // an end that went well ends a streak.
  events.on('call.ended', 'breaker-evidence', async ({ event, call }) => {
    if (call) await breakers.recordEnd(event, () => agentOfCall(call.agent_id));
  });
  // A call placed here that ended unanswered gives back the AI place it held while ringing.
  events.on('call.ended', 'ai-place-release', ({ event }) => load.release(event.callId));
}

/** The modules that react to a batch's transitions. */
export interface BatchReactions {
  batchReads: Pick<BatchReads, 'forget'>;
}

/**
 * Every reaction to a batch's status change (`BatchLifecycle`, services/batch-lifecycle.ts), by
 * name: ingested, paused, resumed, cancelled, failed, completed. The status itself is the
 * lifecycle's write.
 */
export function subscribeBatchReactions(
  events: DomainEventBus,
  reactions: TransactionBus<BatchTransactionEvents>,
  { batchReads }: BatchReactions,
): void {
  // In the transaction that changes the status, so the webhook is queued if and only if the change
  // commits. A batch completed by its last call's end runs here after call-completed-webhook and
  // batch-progress (calls.ending above), so the outbox sends call.completed first.
  reactions.on('batch.transitioned', 'batch-webhook', queueBatchWebhook);
  // After the commit: check-status shows the change at once, not a snapshot read before it (kept
  // up to 250 ms, services/batch-reads.ts). The snapshots are this process's: another process's
  // age out.
  events.on('batch.transitioned', 'batch-status-snapshot', ({ batchId }) => batchReads.forget(batchId));
}
