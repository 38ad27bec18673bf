import type { Dispatcher as HttpDispatcher } from 'undici';
import type { WebCallProvider } from '../adapters/voice/web-provider.js';
import type { Config } from '../config.js';
import type { Analyzer } from '../domain/analysis.js';
import type { AppServices } from '../http/route-kit.js';
import { AgentService } from '../services/agents.js';
import { AnalysisService } from '../services/analysis.js';
import { BatchLifecycle, type BatchTransactionEvents } from '../services/batch-lifecycle.js';
import { BatchReads } from '../services/batch-reads.js';
import { BatchService } from '../services/batches.js';
import type { Breakers } from '../services/breakers.js';
import { agentForDial, CallIntake } from '../services/calls/intake.js';
import { CallLifecycle, type CallTransactionEvents } from '../services/calls/lifecycle.js';
import { LiveView } from '../services/calls/live-view.js';
import { CallReads } from '../services/calls/reads.js';
import { CallRecordings } from '../services/calls/recordings.js';
import { DashboardReads } from '../services/dashboard.js';
import type { Deps } from '../services/deps.js';
import { type DomainEventBus, TransactionBus } from '../services/events.js';
import { BatchExport } from '../services/export.js';
import type { HealthService } from '../services/health.js';
import { IdempotencyService } from '../services/idempotency.js';
import { BatchIngester } from '../services/ingest.js';
import { KeyService } from '../services/keys.js';
import { LiveControlService } from '../services/live-control.js';
import { BatchPreflight } from '../services/preflight.js';
import { RecordingLinks } from '../services/recording-links.js';
import type { SipTrunkService } from '../services/sip-trunks.js';
import { SuppressionService } from '../services/suppressions.js';
import { UserService } from '../services/users.js';
import type { WebhookService } from '../services/webhooks.js';
import { Dispatcher } from '../workers/dispatcher/index.js';
import { Reconciler } from '../workers/reconciler.js';
import { WebhookSender } from '../workers/webhook-sender.js';
import type { Storage } from './storage.js';
import { subscribeBatchReactions, subscribeCallReactions } from './subscribers.js';
import type { Voice } from './voice.js';

/** The services the HTTP app serves; the runtime hands tests the web provider itself. */
export type RuntimeServices = AppServices & { webCalls: WebCallProvider };

/** The services the HTTP app serves, and the call modules and workers' engines behind them. */
export interface BuiltServices {
  services: RuntimeServices;
  lifecycle: CallLifecycle;
  dispatcher: Dispatcher;
  ingester: BatchIngester;
  reconciler: Reconciler;
  webhookSender: WebhookSender;
}

/**
 * The services over `deps`, the call's and the batch's modules, and the reactions to their events
 * (subscribed here, in `subscribers.ts`). The trunk and webhook services are built earlier, as the voice
 * side reads trunks and signing secrets through them.
 */
export function buildServices(
  config: Config,
  deps: Deps,
  context: {
    storage: Storage;
    voice: Voice;
    events: DomainEventBus;
    /** The reactions inside the call's transactions (the dial steps' too). */
    reactions: TransactionBus<CallTransactionEvents>;
    trunks: SipTrunkService;
    webhooks: WebhookService;
    health: HealthService;
    /** The dependencies' circuit breakers (services/breakers.ts). */
    breakers: Breakers;
    analyzer: Analyzer;
    /** The client webhooks go out through (the address guard). */
    http: HttpDispatcher;
    version: string;
    liveCommandTimeoutMs?: number | undefined;
    liveHeartbeatMs?: number | undefined;
  },
): BuiltServices {
  const { storage, voice, events, reactions, webhooks } = context;
  const links = new RecordingLinks(deps);
  const live = new LiveView(deps, links);
  const lifecycle = new CallLifecycle(deps, events, reactions);
  const calls = new CallIntake(deps, lifecycle, events, context.breakers, voice.load);
  const callReads = new CallReads(deps, live, links);
  const reconciler = new Reconciler(deps, lifecycle, live, voice.load);
  const batchReactions = new TransactionBus<BatchTransactionEvents>();
  const batchLifecycle = new BatchLifecycle(events, batchReactions);
  const batches = new BatchService(deps, batchLifecycle);
  const ingester = new BatchIngester(deps, batches, batchLifecycle);
  batches.onAccepted((batchId, contacts) => ingester.start(batchId, contacts));
  const dispatcher = new Dispatcher({
    deps,
    lifecycle,
    batchLifecycle,
    live,
    batches,
    limiter: storage.limiter,
    maxConcurrentCalls: config.maxConcurrentCalls,
    load: voice.load,
    breakers: context.breakers,
  });
  const liveControl = new LiveControlService({
    calls: callReads,
    channel: storage.liveChannel,
    ownerOf: async (callId) => (await deps.dials.find(callId))?.owner ?? null,
    logger: deps.logger,
    ...(context.liveCommandTimeoutMs ? { commandTimeoutMs: context.liveCommandTimeoutMs } : {}),
    ...(context.liveHeartbeatMs ? { heartbeatMs: context.liveHeartbeatMs } : {}),
  });
  // Every end a transport reports is applied by the call's lifecycle, which announces it.
  voice.provider.onCallEnded(async (event) => {
    await lifecycle.finish(event);
  });
  subscribeCallReactions(events, reactions, {
    live,
    liveControl,
    dispatcher,
    batchLifecycle,
    metrics: deps.metrics,
    links,
    breakers: context.breakers,
    agentOfCall: async (agentId) => {
      const row = await deps.store.agents.get(agentId);
      if (!row) return null;
      const agent = agentForDial(row);
      return { agent, heldHere: deps.provider.holdsConversations?.(agent) ?? false };
    },
    serviceRetryMs: config.serviceRetryMs,
    load: voice.load,
  });
  const batchReads = new BatchReads(deps, callReads, links);
  subscribeBatchReactions(events, batchReactions, { batchReads });
  const services: RuntimeServices = {
    keys: new KeyService(deps),
    users: new UserService(deps),
    agents: new AgentService(deps),
    calls,
    callReads,
    recordings: new CallRecordings(deps, links),
    health: context.health,
    batches,
    batchReads,
    dashboard: new DashboardReads(deps, batchReads),
    batchExport: new BatchExport(deps),
    sipTrunks: context.trunks,
    webhooks,
    analysis: new AnalysisService(deps, context.analyzer, links),
    suppressions: new SuppressionService(deps),
    preflight: new BatchPreflight(deps, batches),
    idempotency: new IdempotencyService(deps),
    live: liveControl,
    webCalls: voice.webCalls,
  };
  const webhookSender = new WebhookSender({
    deps,
    webhooks,
    http: context.http,
    concurrency: config.webhookConcurrency,
    timeoutMs: config.webhookTimeoutMs,
    userAgent: `outdial-webhooks/${context.version}`,
  });
  return { services, lifecycle, dispatcher, ingester, reconciler, webhookSender };
}
