import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { LlmAnalyzer } from './adapters/analysis/llm.js';
import { LocalAnalyzer } from './adapters/analysis/local.js';
import { modelDependencies } from './adapters/models/index.js';
import type { DatabaseHandle, Progress } from './adapters/postgres/database.js';
import { DependencyProbes, probeEndpoints } from './adapters/probes.js';
import type { SimulatedVoiceProvider } from './adapters/voice/simulator.js';
import type { Config } from './config.js';
import type { Analyzer } from './domain/analysis.js';
import { batchSources } from './domain/batch-lifecycle.js';
import { engineKindOf } from './domain/dependencies.js';
import { type App, buildApp } from './http/app.js';
import { createLogger } from './logging.js';
import { Metrics } from './metrics.js';
import type { DependencyProber, LiveCallChannel } from './ports.js';
import { Breakers } from './services/breakers.js';
import type { CallTransactionEvents } from './services/calls/lifecycle.js';
import type { Deps } from './services/deps.js';
import { type DomainEvents, EventBus, TransactionBus } from './services/events.js';
import { HealthService } from './services/health.js';
import type { BatchIngester } from './services/ingest.js';
import { Sealer } from './services/sealing.js';
import { loadSecrets } from './services/secrets.js';
import { SipTrunkService } from './services/sip-trunks.js';
import { WebhookService } from './services/webhooks.js';
import { type LookupFn, webhookDispatcher } from './webhooks/address-guard.js';
import type { Role } from './wiring/role.js';
import { buildServices, type RuntimeServices } from './wiring/services.js';
import { openConfiguredDatabase, openStorage, type StorageOverrides } from './wiring/storage.js';
import { buildVoice, type VoiceOverrides } from './wiring/voice.js';
import { buildWorkers } from './wiring/workers.js';
import type { Dispatcher } from './workers/dispatcher/index.js';
import type { Reconciler } from './workers/reconciler.js';
import { createRecordingPruner, RecordingPruner } from './workers/recording-pruner.js';
import type { WebhookSender } from './workers/webhook-sender.js';

export { openConfiguredDatabase };

export const VERSION: string = (
  JSON.parse(fs.readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as {
    version: string;
  }
).version;

export type { Role };

/** Adapters a caller (a test, a benchmark) may build itself instead of letting the config decide. */
export interface RuntimeOverrides extends StorageOverrides, VoiceOverrides {
  /** What the process is for (default `serve`): `api` builds no SIP or RTP stack. */
  role?: Role;
  /** Asks the dependencies of open breakers a real question (default: adapters/probes.ts over the configuration). */
  prober?: DependencyProber;
  logger?: Logger;
  /** Milliseconds between reconciler passes when idle. */
  reconcileIdleMs?: number;
  /** Milliseconds between dispatcher passes. */
  dispatchTickMs?: number;
  /** The post-call analyzer (default: local, or the LLM when OUTDIAL_LLM_URL is set). */
  analyzer?: Analyzer;
  /** Resolves webhook host names (tests point a name at an address of their choosing). */
  webhookResolve?: LookupFn;
  /** Where the start's progress lines go (the CLI prints them; default: the logger). */
  progress?: Progress;
  /** Live call control's waits: its commands' (default 5 s) and the event streams' heartbeat (default 15 s). */
  liveCommandTimeoutMs?: number;
  liveHeartbeatMs?: number;
}

export interface Runtime {
  config: Config;
  deps: Deps;
  database: DatabaseHandle;
  app: App;
  services: RuntimeServices;
  /** The live view's store: Redis (REDIS_URL), memory, or one a caller gave. */
  cacheKind: 'redis' | 'memory' | 'custom';
  /** The live call channel (memory, or Redis pub/sub with REDIS_URL). */
  liveChannel: LiveCallChannel;
  ingester: BatchIngester;
  webhookSender: WebhookSender;
  dispatcher: Dispatcher;
  /** Settles the calls of gone owners (the reconciler worker's passes). */
  reconciler: Reconciler;
  /** The simulator this runtime built (null when the caller gave its own provider). */
  simulator: SimulatedVoiceProvider | null;
  adminToken: string;
  adminTokenGenerated: boolean;
  startWorkers(): void;
  close(): Promise<void>;
}

/**
 * The composition root: config → storage (`wiring/storage.ts`) → voice (`wiring/voice.ts`) →
 * services and their subscribers (`wiring/services.ts`, `wiring/subscribers.ts`) → the HTTP app
 * and the workers (`wiring/workers.ts`). It holds no rule of its own.
 */
export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const logger = overrides.logger ?? createLogger(config);
  const secrets = loadSecrets(config.dataDir, {
    ...(config.adminToken ? { adminToken: config.adminToken } : {}),
    ...(config.jwtSecret ? { jwtSecret: config.jwtSecret } : {}),
    ...(config.encryptionKey ? { encryptionKey: config.encryptionKey } : {}),
  });
  const sealer = new Sealer({
    current: secrets.encryptionKey,
    previous: config.previousEncryptionKeys,
    legacyJwtSecret: secrets.jwtSecret,
  });
  const progress: Progress = overrides.progress ?? ((line, level) => logger[level](line));
  const database = overrides.database ?? (await openConfiguredDatabase(config, progress));
  const opened: Array<() => Promise<void>> = overrides.database ? [] : [() => database.close()];
  try {
    // What happens to calls (opened, sent, answered, ended) and batches (their transitions), for the reactions subscribed in
    // wiring/subscribers.ts; the dial steps (built with the storage) announce some of them.
    const events = new EventBus<DomainEvents>(logger);
    // The reactions that are part of a call's writes (its steps, its end), run in their transactions.
    const reactions = new TransactionBus<CallTransactionEvents>();
    const storage = await openStorage(
      config,
      overrides,
      { database, sealer, logger, progress, events, reactions },
      opened,
    );
    const { store, clock } = storage;
    const metrics = new Metrics({ processMetrics: true });
    // Webhooks and agents' HTTP tools go out through one client whose connect step refuses
    // forbidden addresses.
    const http = webhookDispatcher({
      allowPrivate: config.webhookAllowPrivate,
      ...(overrides.webhookResolve ? { resolve: overrides.webhookResolve } : {}),
    });
    opened.unshift(() => http.close());
    // The trunk directory and the webhook secrets, which the voice side reads while calls are up.
    const trunks = new SipTrunkService({ store, clock, sealer });
    const webhooks = new WebhookService({ store, clock, sealer });
    // The dependencies' circuit breakers, shared by every process through the database: the
    // answered call, the dispatcher, the single dial and the health report read them.
    const breakers = new Breakers({
      store,
      clock,
      logger,
      metrics,
      policy: config.breakers,
      engine: engineKindOf(config.conversationEngine, config.llmUrl),
      models: modelDependencies(config),
    });
    // One real, small question to a dependency: the breakers' probes and the health report ask it.
    const probes = overrides.prober ?? buildProber(config, trunks, opened);
    const voice = await buildVoice(
      config,
      overrides,
      {
        storage,
        metrics,
        logger,
        http,
        dependencies: breakers,
        signingSecrets: (callId) => webhooks.signingSecretsForCall(callId),
        trunks,
        version: VERSION,
        role: overrides.role ?? 'serve',
      },
      opened,
    );
    const deps: Deps = {
      config,
      store,
      cache: storage.cache,
      provider: voice.provider,
      dials: storage.dials,
      clock,
      logger,
      jwtSecret: secrets.jwtSecret,
      sealer,
      metrics,
    };
    const { services, dispatcher, ingester, reconciler, webhookSender } = buildServices(config, deps, {
      storage,
      voice,
      events,
      reactions,
      trunks,
      webhooks,
      breakers,
      health: new HealthService({
        database,
        cache: storage.cache,
        cacheKind: storage.cacheKind,
        version: VERSION,
        breakers,
        trunksOf: (userId) => store.sipTrunks.listForUser(userId),
        prober: probes,
      }),
      analyzer: overrides.analyzer ?? buildAnalyzer(config, logger, opened),
      http,
      version: VERSION,
      liveCommandTimeoutMs: overrides.liveCommandTimeoutMs,
      liveHeartbeatMs: overrides.liveHeartbeatMs,
    });
    const app = await buildApp({
      services,
      adminToken: secrets.adminToken,
      jwtSecret: secrets.jwtSecret,
      secureCookies: config.publicUrl.startsWith('https:'),
      metrics,
      metricsAllow: config.metricsAllow,
      sampleGauges: async () => {
        metrics.dispatcherActive.set(dispatcher.activeCalls);
        metrics.dispatcherClaimed.set(dispatcher.waitingCalls);
        metrics.aiCallsInProgress.set(voice.load.aiCalls);
        metrics.overloaded.set(voice.load.overloaded ? 1 : 0);
        metrics.eventLoopLag.set(voice.load.lagMs / 1000);
        metrics.queueDepth.set(await store.batchContacts.dueCount(batchSources('claim')));
        await breakers.sample();
      },
      logger,
      conciseRequestLog: config.logFormat === 'pretty',
      version: VERSION,
    });
    const workers = buildWorkers(
      {
        reconciler,
        dispatcher,
        ingester,
        webhookSender,
        analysis: services.analysis,
        idempotency: services.idempotency,
        breakers,
        prober: probes,
        batches: services.batches,
      },
      {
        logger,
        handOffs: database.kind !== 'pglite',
        reconcileIdleMs: overrides.reconcileIdleMs,
        dispatchTickMs: overrides.dispatchTickMs,
      },
    );
    // Every role may hold calls, so every role keeps its host's recordings to their retention.
    const pruning = createRecordingPruner(new RecordingPruner(voice.recordings, logger), logger);
    pruning.start();
    let started = false;

    return {
      config,
      deps,
      database,
      app,
      services,
      ingester,
      webhookSender,
      dispatcher,
      reconciler,
      simulator: voice.simulator,
      liveChannel: storage.liveChannel,
      cacheKind: storage.cacheKind,
      adminToken: secrets.adminToken,
      adminTokenGenerated: secrets.adminTokenGenerated,
      startWorkers() {
        if (started) return;
        started = true;
        // The embedded database belongs to this process alone, so whatever it left half done
        // (an ingestion, a call) is an orphan of a previous run: take it up now, not after a lease.
        const orphans =
          database.kind === 'pglite'
            ? Promise.all([
                ingester.recover({ limit: 1000, ignoreLease: true }),
                reconciler.reconcileStale({ all: true, limit: 100_000 }),
              ])
            : Promise.resolve();
        void orphans
          .catch((error: unknown) =>
            logger.error({ err: error }, 'could not recover work left by a previous run'),
          )
          .finally(() => {
            for (const worker of workers) worker.start();
          });
      },
      async close() {
        await app.close();
        await Promise.all([...workers, pruning].map((worker) => worker.stop()));
        await dispatcher.close();
        await ingester.idle();
        await webhookSender.close();
        for (const close of opened) await close();
      },
    };
  } catch (error) {
    for (const close of opened) await close().catch(() => {});
    throw error;
  }
}

/** The analyzer the config asks for: an OpenAI-compatible LLM (falling back to local), or local. */
function buildAnalyzer(config: Config, logger: Logger, opened: Array<() => Promise<void>>): Analyzer {
  const local = new LocalAnalyzer();
  if (!config.llmUrl || !config.llmModel) return local;
  const llm = new LlmAnalyzer({
    url: config.llmUrl,
    model: config.llmModel,
    ...(config.llmApiKey ? { apiKey: config.llmApiKey } : {}),
    fallback: local,
    logger,
  });
  opened.unshift(() => llm.close());
  return llm;
}

/** The dependency probes over the configured endpoints and the trunk directory, closed with the runtime. */
function buildProber(
  config: Config,
  trunks: SipTrunkService,
  opened: Array<() => Promise<void>>,
): DependencyProber {
  const probes = new DependencyProbes({
    endpoints: probeEndpoints(config),
    trunks,
    ...(config.sipPublicAddress ? { sipAddress: config.sipPublicAddress } : {}),
  });
  opened.unshift(() => probes.close());
  return probes;
}
