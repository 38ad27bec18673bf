import path from 'node:path';
import type { Logger } from 'pino';
import type { Dispatcher as HttpDispatcher } from 'undici';
import { type BuiltVoiceModels, buildVoiceModels, modelEndpoints } from '../adapters/models/index.js';
import { RealtimeConnection } from '../adapters/models/realtime.js';
import { EspeakTextToSpeech } from '../adapters/models/tts.js';
import { LocalDiskRecordings } from '../adapters/recordings/local-disk.js';
import { RedisLeases } from '../adapters/redis/leases.js';
import { RoutingVoiceProvider } from '../adapters/voice/router.js';
import { SimulatedVoiceProvider } from '../adapters/voice/simulator.js';
import { SipHandOff } from '../adapters/voice/sip/hand-off.js';
import { publicAddressFor, SipVoiceProvider } from '../adapters/voice/sip/provider.js';
import { WebCallProvider } from '../adapters/voice/web-provider.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { DependencyGate, TrunkDirectory, VoiceProvider } from '../ports.js';
import { loadConversationEngine } from '../voice/engines/index.js';
import { HttpToolCaller } from '../voice/http-tools.js';
import { ProcessLoad } from '../voice/load.js';
import type { PrunedStore } from '../workers/recording-pruner.js';
import type { Role } from './role.js';
import type { Storage } from './storage.js';

/** Simulated calls' spoken recordings are a cache on disk, kept at most this many days. */
const SIM_RECORDING_DAYS = 7;

/** What a caller (a test, a benchmark) may give instead of the simulator built here. */
export interface VoiceOverrides {
  provider?: VoiceProvider;
  /** A provider of the caller's own around the simulator this runtime builds (tests). */
  wrapSimulator?: (simulator: SimulatedVoiceProvider) => VoiceProvider;
}

export interface Voice {
  /** The router every call goes through: the simulator (or the caller's), SIP, the web calls. */
  provider: RoutingVoiceProvider;
  /** The simulator built here (null when the caller gave its own provider). */
  simulator: SimulatedVoiceProvider | null;
  webCalls: WebCallProvider;
  /** This process's load: the AI calls its sessions hold and its event-loop lag (the dispatcher reads it). */
  load: ProcessLoad;
  /** This host's recording stores, for the recording pruner. */
  recordings: PrunedStore[];
}

/**
 * The voice side: the model ports, the one conversation engine, and the transports (simulator,
 * SIP, web) behind one router. Each part's close goes to the front of `opened`.
 */
export async function buildVoice(
  config: Config,
  overrides: VoiceOverrides,
  context: {
    storage: Storage;
    metrics: Metrics;
    logger: Logger;
    /** The client agents' HTTP tools go out through (the webhooks' address guard). */
    http: HttpDispatcher;
    /** The engine's models' circuit breakers, which an answered call asks first (services/breakers.ts). */
    dependencies: DependencyGate;
    /** A call's user's webhook secrets, which sign its HTTP tool requests. */
    signingSecrets: (callId: string) => Promise<string[]>;
    /** The SIP trunks calls are placed through. */
    trunks: TrunkDirectory;
    version: string;
    /** The process's role: `api` holds no SIP stack and hands its SIP calls to the workers. */
    role: Role;
  },
  opened: Array<() => Promise<void>>,
): Promise<Voice> {
  const { storage, metrics, logger } = context;
  const { dials, clock, limiter, liveChannel, redisCache } = storage;
  // The model ports every answered call is given: OpenAI-compatible servers where configured,
  // pocketsphinx, espeak-ng and the energy/Silero VAD where not.
  const voiceModels: BuiltVoiceModels = buildVoiceModels({
    ...modelEndpoints(config),
    timeoutMs: config.modelTimeoutMs,
    logger,
  });
  opened.unshift(() => voiceModels.close());
  // Every answered call's session counts itself here, on every transport.
  const load = new ProcessLoad({
    maxAiCalls: config.maxAiCalls,
    maxLagMs: config.maxEventLoopLagMs,
    logger,
  });
  opened.unshift(async () => load.close());
  // Agents' HTTP tools go out through the client whose connect step refuses forbidden addresses,
  // signed with the call's user's webhook secret.
  const httpTools = new HttpToolCaller({
    dispatcher: context.http,
    allowPrivate: config.webhookAllowPrivate,
    signingSecrets: context.signingSecrets,
    userAgent: `outdial-tools/${context.version}`,
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
  // Recordings live on this host's disk under the data dir, one folder per transport; their
  // retention is the recording pruner's (workers/recording-pruner.ts).
  const sipRecordings = new LocalDiskRecordings({
    dir: path.join(config.dataDir, 'sip', 'recordings'),
    retentionDays: config.recordingRetentionDays,
  });
  const webRecordings = new LocalDiskRecordings({
    dir: path.join(config.dataDir, 'web', 'recordings'),
    retentionDays: config.recordingRetentionDays,
  });
  // Simulated calls' spoken recordings are made on request and kept a week at most, as they can
  // be made again from the transcript.
  const simRecordings = overrides.provider
    ? null
    : new LocalDiskRecordings({
        dir: path.join(config.dataDir, 'sim', 'recordings'),
        retentionDays: Math.min(config.recordingRetentionDays ?? SIM_RECORDING_DAYS, SIM_RECORDING_DAYS),
      });
  const simulator = !simRecordings
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
                load,
                dependencies: context.dependencies,
              },
            }
          : {}),
        recordings: simRecordings,
        live: liveChannel,
        logger,
      });
  const fallback =
    overrides.provider ??
    (overrides.wrapSimulator
      ? overrides.wrapSimulator(simulator as SimulatedVoiceProvider)
      : (simulator as SimulatedVoiceProvider));
  // `outdial api` builds no SIP or RTP stack: its single SIP calls are placed by the workers.
  const sip: VoiceProvider =
    context.role === 'api'
      ? new SipHandOff({ records: dials, recordings: sipRecordings })
      : new SipVoiceProvider({
          publicAddress: config.sipPublicAddress ?? publicAddressFor(config.sipBindAddress),
          bindAddress: config.sipBindAddress,
          sipPort: config.sipPort,
          rtpPorts: config.rtpPorts,
          recordings: sipRecordings,
          records: dials,
          ringTimeoutMs: config.sipRingTimeoutMs,
          maxCallMs: config.maxCallSeconds * 1000,
          amd: config.amd,
          trunks: context.trunks,
          clock,
          engine,
          models: voiceModels,
          // The start log the dispatcher uses: trunk rates and batch paces right before each INVITE.
          limiter,
          // Several processes share one Redis: each trunk's places are then held across all of them.
          ...(redisCache ? { leases: new RedisLeases(redisCache.redis) } : {}),
          live: liveChannel,
          load,
          dependencies: context.dependencies,
          logger,
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
    recordings: webRecordings,
    records: dials,
    live: liveChannel,
    load,
    dependencies: context.dependencies,
    logger,
    clock,
  });
  const provider = new RoutingVoiceProvider(fallback, sip, [webCalls]);
  opened.unshift(() => provider.close());
  const recordings: PrunedStore[] = [
    { name: 'sip', store: sipRecordings },
    { name: 'web', store: webRecordings },
    ...(simRecordings ? [{ name: 'sim', store: simRecordings }] : []),
  ];
  return { provider, simulator, webCalls, load, recordings };
}
