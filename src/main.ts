import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { LlmAnalyzer } from './adapters/analysis/llm.js';
import { LocalAnalyzer } from './adapters/analysis/local.js';
import { MemoryLiveCache } from './adapters/memory/live-cache.js';
import { MemoryLiveChannel } from './adapters/memory/live-channel.js';
import { MemoryRateLimiter } from './adapters/memory/rate-limiter.js';
import { buildVoiceModels, modelEndpoints } from './adapters/models/index.js';
import { RealtimeConnection } from './adapters/models/realtime.js';
import { EspeakTextToSpeech } from './adapters/models/tts.js';
import { type DatabaseHandle, openDatabase, type Progress } from './adapters/postgres/database.js';
import { DbDialRecords } from './adapters/postgres/dial-records.js';
import { migrate, versionRange } from './adapters/postgres/migrate.js';
import { legacyBridge, pgStore } from './adapters/postgres/store.js';
import { LocalDiskRecordings } from './adapters/recordings/local-disk.js';
import { RedisLeases } from './adapters/redis/leases.js';
import type { RedisLiveCache } from './adapters/redis/live-cache.js';
import { RedisLiveChannel } from './adapters/redis/live-channel.js';
import { RedisRateLimiter } from './adapters/redis/rate-limiter.js';
import { RoutingVoiceProvider } from './adapters/voice/router.js';
import { SimulatedVoiceProvider } from './adapters/voice/simulator.js';
import { publicAddressFor, SipVoiceProvider } from './adapters/voice/sip/provider.js';
import { WebCallProvider } from './adapters/voice/web-provider.js';
import type { Config } from './config.js';
import type { Analyzer } from './domain/analysis.js';
import { batchSources } from './domain/batch-lifecycle.js';
import { type App, buildApp } from './http/app.js';
import { createLogger } from './logging.js';
import { Metrics } from './metrics.js';
import {
  type Clock,
  type LiveCache,
  type LiveCallChannel,
  type RateLimiter,
  systemClock,
  type VoiceProvider,
} from './ports.js';
import { AgentService } from './services/agents.js';
import { AnalysisService } from './services/analysis.js';
import { BatchReads } from './services/batch-reads.js';
import { BatchService } from './services/batches.js';
import { queueCallProgress } from './services/call-events.js';
import { CallIntake } from './services/calls/intake.js';
import { CallLifecycle } from './services/calls/lifecycle.js';
import { LiveView } from './services/calls/live-view.js';
import { CallReads } from './services/calls/reads.js';
import { CallRecordings } from './services/calls/recordings.js';
import { DashboardReads } from './services/dashboard.js';
import type { Deps } from './services/deps.js';
import { type CallEvents, EventBus } from './services/events.js';
import { BatchExport } from './services/export.js';
import { HealthService } from './services/health.js';
import { IdempotencyService } from './services/idempotency.js';
import { BatchIngester } from './services/ingest.js';
import { KeyService } from './services/keys.js';
import { LiveControlService } from './services/live-control.js';
import { BatchPreflight } from './services/preflight.js';
import { RecordingLinks } from './services/recording-links.js';
import { resealAtStart, Sealer } from './services/sealing.js';
import { loadSecrets } from './services/secrets.js';
import { SipTrunkService } from './services/sip-trunks.js';
import { SuppressionService } from './services/suppressions.js';
import { UserService } from './services/users.js';
import { WebhookService } from './services/webhooks.js';
import { UnreachableError } from './start-errors.js';
import { loadConversationEngine } from './voice/engines/index.js';
import { HttpToolCaller } from './voice/http-tools.js';
import { type LookupFn, webhookDispatcher } from './webhooks/address-guard.js';
import { subscribeCallReactions } from './wiring/subscribers.js';
import { Dispatcher } from './workers/dispatcher/index.js';
import { PollLoop } from './workers/loop.js';
import { createReconciler, Reconciler } from './workers/reconciler.js';
import { WebhookSender } from './workers/webhook-sender.js';

export const VERSION: string = (
  JSON.parse(fs.readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as {
    version: string;
  }
).version;

export type Role = 'serve' | 'api' | 'worker';

/** Simulated calls' spoken recordings are a cache on disk, kept at most this many days. */
const SIM_RECORDING_DAYS = 7;

/** Adapters a caller (a test, a benchmark) may build itself instead of letting the config decide. */
export interface RuntimeOverrides {
  logger?: Logger;
  database?: DatabaseHandle;
  cache?: LiveCache;
  provider?: VoiceProvider;
  /** A provider of the caller's own around the simulator this runtime builds (tests). */
  wrapSimulator?: (simulator: SimulatedVoiceProvider) => VoiceProvider;
  /** The dial records (a test gives its own simulator the same ones); started and closed here. */
  dials?: DbDialRecords;
  clock?: Clock;
  limiter?: RateLimiter;
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
  services: {
    keys: KeyService;
    users: UserService;
    agents: AgentService;
    calls: CallIntake;
    callReads: CallReads;
    recordings: CallRecordings;
    health: HealthService;
    batches: BatchService;
    batchReads: BatchReads;
    dashboard: DashboardReads;
    batchExport: BatchExport;
    sipTrunks: SipTrunkService;
    webhooks: WebhookService;
    analysis: AnalysisService;
    preflight: BatchPreflight;
    idempotency: IdempotencyService;
    live: LiveControlService;
    webCalls: WebCallProvider;
  };
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

/** The composition root: config -> adapters -> services -> HTTP app and workers. */
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
    const migrating = performance.now();
    const applied = await migrate(database, undefined, (versions) =>
      progress(`Applying migrations ${versionRange(versions)}`, 'info'),
    );
    if (applied.length > 0) {
      const seconds = ((performance.now() - migrating) / 1000).toFixed(1);
      progress(`Applied migrations ${versionRange(applied)} in ${seconds} s`, 'info');
    }
    const store = pgStore(database.db, database.kind);
    await resealAtStart(store, sealer, logger);
    // This process's lease, held from before its first call to after its last: every call it
    // places names it, and is alive while it is renewed.
    const dials = overrides.dials ?? new DbDialRecords(database.db, logger, { progress: queueCallProgress });
    await dials.start();
    opened.unshift(() => dials.close());
    // ioredis (~8 MB of resident memory) is loaded only where Redis can be in use.
    const redisModule =
      config.redisUrl || overrides.cache ? await import('./adapters/redis/live-cache.js') : null;
    const cache =
      overrides.cache ??
      (config.redisUrl && redisModule
        ? new redisModule.RedisLiveCache({ url: config.redisUrl })
        : new MemoryLiveCache());
    const redisCache: RedisLiveCache | null =
      redisModule && cache instanceof redisModule.RedisLiveCache ? cache : null;
    if (!overrides.cache) opened.unshift(() => cache.close());
    // A REDIS_URL that answers nothing in 5 s stops the start: the rate limits and the live view
    // it was set for would silently be missing. (Once started, an outage is waited out.)
    if (!overrides.cache && redisCache && config.redisUrl && !(await redisCache.waitReady(5000))) {
      throw new UnreachableError('redis', config.redisUrl, redisCache.lastError ?? 'no answer in 5 s');
    }
    const cacheKind: Runtime['cacheKind'] = redisCache
      ? 'redis'
      : cache instanceof MemoryLiveCache
        ? 'memory'
        : 'custom';
    const clock = overrides.clock ?? systemClock;
    const limiter =
      overrides.limiter ??
      (redisCache ? new RedisRateLimiter(redisCache.redis) : new MemoryRateLimiter(clock));
    const metrics = new Metrics({ processMetrics: true });
    // Live call control: commands to the process holding a call and its events, across hosts
    // through Redis pub/sub (its own subscriber connection), in this process without Redis.
    const liveChannel: LiveCallChannel = redisCache
      ? new RedisLiveChannel({
          redis: redisCache.redis,
          prefix: redisCache.redis.options.keyPrefix ?? 'outdial:',
          logger,
        })
      : new MemoryLiveChannel();
    opened.unshift(() => liveChannel.close());
    // The model ports every answered call is given: OpenAI-compatible servers where configured,
    // pocketsphinx, espeak-ng and the energy/Silero VAD where not.
    const voiceModels = buildVoiceModels({
      ...modelEndpoints(config),
      timeoutMs: config.modelTimeoutMs,
      logger,
    });
    opened.unshift(() => voiceModels.close());
    // Trunks are read through their service, which needs the dependencies built below.
    let trunks: SipTrunkService | null = null;
    // What happens to calls (opened, sent, ended), for the reactions subscribed below.
    const events = new EventBus<CallEvents>(logger);
    // Webhooks and agents' HTTP tools go out through one client whose connect step refuses
    // forbidden addresses; tools are signed with the call's user's webhook secret (read through the
    // webhook service, built below).
    const http = webhookDispatcher({
      allowPrivate: config.webhookAllowPrivate,
      ...(overrides.webhookResolve ? { resolve: overrides.webhookResolve } : {}),
    });
    opened.unshift(() => http.close());
    let webhookService: WebhookService | null = null;
    const httpTools = new HttpToolCaller({
      dispatcher: http,
      allowPrivate: config.webhookAllowPrivate,
      signingSecrets: async (callId) => (webhookService ? webhookService.signingSecretsForCall(callId) : []),
      userAgent: `outdial-tools/${VERSION}`,
    });
    // One engine for every transport (SIP and the simulator; the realtime one holds audio calls only).
    const engine = await loadConversationEngine(config.conversationEngine, {
      llmUrl: config.llmUrl,
      // espeak-ng speaks the apology when the configured text-to-speech is what failed.
      // The engine's own guards on the models wait as long as the adapters do (OUTDIAL_MODEL_TIMEOUT_MS).
      llm: {
        logger,
        httpTools,
        fallbackTts: new EspeakTextToSpeech(),
        modelTimeoutMs: config.modelTimeoutMs,
      },
      realtime:
        config.realtimeUrl && config.realtimeModel
          ? {
              url: config.realtimeUrl,
              model: config.realtimeModel,
              apiKey: config.realtimeApiKey,
              connect: RealtimeConnection.open,
              logger,
              httpTools,
              fallbackTts: new EspeakTextToSpeech(),
              modelTimeoutMs: config.modelTimeoutMs,
            }
          : null,
    });
    const simulator = overrides.provider
      ? null
      : new SimulatedVoiceProvider({
          ringMs: config.simRingMs,
          talkMs: config.simTalkMs,
          records: dials,
          ...(config.simDialsDir ? { dialsDir: config.simDialsDir } : {}),
          clock,
          onError: (error, event) =>
            logger.error({ err: error, callId: event.callId }, 'could not record a call end'),
          // An LLM engine: simulated calls hold its conversations in text, a persona answering.
          ...(engine.name === 'llm' && voiceModels.chat
            ? {
                conversation: {
                  engine,
                  models: voiceModels,
                  maxCallMs: config.maxCallSeconds * 1000,
                  live: liveChannel,
                },
              }
            : {}),
          // Spoken recordings are made on request and kept here (the SIP ones are in sip/recordings);
          // a week at most, as they can be made again from the transcript.
          recordings: new LocalDiskRecordings({
            dir: path.join(config.dataDir, 'sim', 'recordings'),
            retentionDays: Math.min(config.recordingRetentionDays ?? SIM_RECORDING_DAYS, SIM_RECORDING_DAYS),
          }),
          logger,
        });
    const fallback =
      overrides.provider ??
      (overrides.wrapSimulator
        ? overrides.wrapSimulator(simulator as SimulatedVoiceProvider)
        : (simulator as SimulatedVoiceProvider));
    const sip = new SipVoiceProvider({
      publicAddress: config.sipPublicAddress ?? publicAddressFor(config.sipBindAddress),
      bindAddress: config.sipBindAddress,
      sipPort: config.sipPort,
      rtpPorts: config.rtpPorts,
      // The recording port: local disk under the data dir, where recordings always were.
      recordings: new LocalDiskRecordings({
        dir: path.join(config.dataDir, 'sip', 'recordings'),
        retentionDays: config.recordingRetentionDays,
      }),
      records: dials,
      ringTimeoutMs: config.sipRingTimeoutMs,
      maxCallMs: config.maxCallSeconds * 1000,
      amd: config.amd,
      trunk: async (trunkId) => (trunks ? trunks.forDialing(trunkId) : null),
      engine,
      models: voiceModels,
      // The start log the dispatcher uses: trunk rates and batch paces right before each INVITE.
      limiter,
      // Several processes share one Redis: each trunk's places are then held across all of them.
      ...(redisCache ? { leases: new RedisLeases(redisCache.redis) } : {}),
      live: liveChannel,
      logger,
      onSent: (callId, at) => void events.emit('call.sent', { callId, at }),
      onFinalResponse: (trunk, code) => metrics.sipFinalResponses.inc({ trunk, code: String(code) }),
      onTrunkLoad: (trunk, up, waiting) => {
        metrics.sipTrunkCalls.set({ trunk, state: 'up' }, up);
        metrics.sipTrunkCalls.set({ trunk, state: 'waiting' }, waiting);
      },
    });
    // Calls from the dashboard's "Talk to this agent": a browser on a WebSocket, never dialed.
    const webCalls = new WebCallProvider({
      engine,
      models: voiceModels,
      maxCallMs: config.maxCallSeconds * 1000,
      recordings: new LocalDiskRecordings({
        dir: path.join(config.dataDir, 'web', 'recordings'),
        retentionDays: config.recordingRetentionDays,
      }),
      records: dials,
      live: liveChannel,
      logger,
    });
    const provider = new RoutingVoiceProvider(fallback, sip, [webCalls]);
    opened.unshift(() => provider.close());

    const deps: Deps = {
      config,
      store,
      db: database.db,
      legacy: legacyBridge,
      cache,
      provider,
      dials,
      clock,
      logger,
      jwtSecret: secrets.jwtSecret,
      sealer,
      metrics,
    };
    trunks = new SipTrunkService(deps);
    const links = new RecordingLinks(deps);
    const live = new LiveView(deps, links);
    const lifecycle = new CallLifecycle(deps, live, links, events);
    const calls = new CallIntake(deps, lifecycle, events);
    const callReads = new CallReads(deps, live, links);
    const reconciler = new Reconciler(deps, lifecycle, live);
    const batches = new BatchService(deps);
    const ingester = new BatchIngester(deps, batches);
    batches.onAccepted((batchId, contacts) => ingester.start(batchId, contacts));
    const dispatcher = new Dispatcher({
      deps,
      lifecycle,
      live,
      batches,
      limiter,
      maxConcurrentCalls: config.maxConcurrentCalls,
    });
    const liveControl = new LiveControlService({
      calls: callReads,
      channel: liveChannel,
      logger,
      ...(overrides.liveCommandTimeoutMs ? { commandTimeoutMs: overrides.liveCommandTimeoutMs } : {}),
      ...(overrides.liveHeartbeatMs ? { heartbeatMs: overrides.liveHeartbeatMs } : {}),
    });
    provider.onCallEnded(async (event) => {
      await lifecycle.finish(event);
    });
    subscribeCallReactions(events, { live, liveControl, dispatcher });
    const batchReads = new BatchReads(deps, callReads);
    const services = {
      keys: new KeyService(deps),
      users: new UserService(deps),
      agents: new AgentService(deps),
      calls,
      callReads,
      recordings: new CallRecordings(deps, links),
      health: new HealthService({ database, cache, cacheKind, version: VERSION }),
      batches,
      batchReads,
      dashboard: new DashboardReads(deps, batchReads),
      batchExport: new BatchExport(deps),
      sipTrunks: trunks,
      webhooks: new WebhookService(deps),
      analysis: new AnalysisService(deps, overrides.analyzer ?? buildAnalyzer(config, logger, opened), links),
      suppressions: new SuppressionService(deps),
      preflight: new BatchPreflight(deps, batches),
      idempotency: new IdempotencyService(deps),
      live: liveControl,
      webCalls,
    };
    webhookService = services.webhooks;
    const webhookSender = new WebhookSender({
      deps,
      webhooks: services.webhooks,
      http,
      concurrency: config.webhookConcurrency,
      timeoutMs: config.webhookTimeoutMs,
      userAgent: `outdial-webhooks/${VERSION}`,
    });
    const app = await buildApp({
      services,
      adminToken: secrets.adminToken,
      jwtSecret: secrets.jwtSecret,
      secureCookies: config.publicUrl.startsWith('https:'),
      metrics: deps.metrics,
      metricsAllow: config.metricsAllow,
      sampleGauges: async () => {
        deps.metrics.dispatcherActive.set(dispatcher.activeCalls);
        deps.metrics.dispatcherClaimed.set(dispatcher.waitingCalls);
        deps.metrics.queueDepth.set(await store.batchContacts.dueCount(batchSources('claim')));
      },
      logger,
      conciseRequestLog: config.logFormat === 'pretty',
      version: VERSION,
    });
    const workers: PollLoop[] = [
      createReconciler(reconciler, logger, overrides.reconcileIdleMs),
      new PollLoop({
        name: 'dispatcher',
        idleMs: overrides.dispatchTickMs ?? 200,
        alwaysPause: true,
        logger,
        tick: () => dispatcher.tick(),
      }),
      new PollLoop({ name: 'ingest-recovery', idleMs: 2_000, logger, tick: () => ingester.recover() }),
      new PollLoop({ name: 'webhooks', idleMs: 200, logger, tick: () => webhookSender.tick() }),
      new PollLoop({ name: 'analysis', idleMs: 200, logger, tick: () => services.analysis.tick() }),
      // Idempotency-Key records older than 24 h answer nothing any more; a pass a minute deletes them.
      new PollLoop({
        name: 'idempotency-purge',
        idleMs: 60_000,
        logger,
        tick: () => services.idempotency.purgeExpired(),
      }),
    ];
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
      simulator,
      liveChannel,
      cacheKind,
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
        await Promise.all(workers.map((worker) => worker.stop()));
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

/**
 * The database the config names, answering. A PostgreSQL server is asked `select 1` first: one
 * that does not answer (or refuses the login) stops the start with UnreachableError, not whichever
 * query happened to meet it.
 */
export async function openConfiguredDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  progress: Progress,
): Promise<DatabaseHandle> {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pgdata'),
    onProgress: progress,
  });
  if (config.databaseUrl) {
    try {
      await database.ping();
    } catch (error) {
      await database.close().catch(() => {});
      throw new UnreachableError('database', config.databaseUrl, error);
    }
  }
  return database;
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
