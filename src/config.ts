import path from 'node:path';
import { type BreakerPolicy, DEFAULT_BREAKER_POLICY } from './domain/breaker.js';
import { SERVICE_RETRY_FIRST_MS, SERVICE_RETRY_MAX_MS } from './domain/failure.js';
import { type CountryCode, isPhoneCountry } from './domain/phone.js';

/**
 * The only reader of process.env. Every setting is parsed once at boot; a bad value stops the start
 * with a message that names the variable, so a typo never turns into a silently different service.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  dataDir: string;
  publicUrl: string;
  adminToken: string | undefined;
  jwtSecret: string | undefined;
  /** Seals secrets at rest (webhook secrets, trunk passwords); unset: generated into the data dir. */
  encryptionKey: string | undefined;
  /** Older encryption keys that still open sealed values during a rotation (never seal). */
  previousEncryptionKeys: string[];
  /** How long a signed recording URL works after it is issued. */
  recordingUrlTtlHours: number;
  voiceProvider: 'simulator';
  simRingMs: number;
  simTalkMs: number;
  /** The first wait before a campaign contact whose call failed on our side is tried again (domain/failure.ts). */
  serviceRetryMs: number;
  /**
   * The circuit breakers (domain/breaker.ts): OUTDIAL_BREAKER_THRESHOLD consecutive service
   * failures within OUTDIAL_BREAKER_WINDOW_MS open one; probes from OUTDIAL_BREAKER_PROBE_MS,
   * doubling up to OUTDIAL_BREAKER_PROBE_MAX_MS.
   */
  breakers: BreakerPolicy;
  /** Folder for the simulator's durable record of dials (one file per call); unset: none. */
  simDialsDir: string | undefined;
  /** Calls of agents with a sipTrunkId: the local address the SIP and RTP sockets bind. */
  sipBindAddress: string;
  /** The address carriers see (Via, Contact, SDP); unset: the bind address, or this host's first public IPv4. */
  sipPublicAddress: string | undefined;
  sipPort: number;
  rtpPorts: [number, number];
  sipRingTimeoutMs: number;
  maxCallSeconds: number;
  /** Answering-machine detection on answered SIP calls. */
  amd: boolean;
  /** OUTDIAL_CONVERSATION_ENGINE: auto | scripted (alias offline) | llm | realtime | an ES module path (src/voice/engines/index.ts). */
  conversationEngine: string;
  /** Real calls' recordings are deleted after this many days; null keeps them. */
  recordingRetentionDays: number | null;
  webhookAllowPrivate: boolean;
  webhookRetryDelaysMs: number[];
  /** Milliseconds one delivery attempt may take in all before it counts as failed. */
  webhookTimeoutMs: number;
  /** Deliveries in flight at once in one process. */
  webhookConcurrency: number;
  /** Client addresses that may read GET /metrics without the admin token. */
  metricsAllow: string[];
  estimatedMinutesPerCall: number;
  /**
   * OUTDIAL_DEFAULT_COUNTRY: the country (ISO 3166-1 alpha-2) numbers written without + are read in,
   * for users without a defaultCountry of their own; US unless set (domain/phone.ts).
   */
  defaultCountry: CountryCode;
  maxConcurrentCalls: number;
  /**
   * OUTDIAL_MAX_AI_CALLS: most answered calls held by a conversation engine in one process; at it,
   * the dispatcher claims no more calls of engine-held agents (src/voice/load.ts).
   */
  maxAiCalls: number;
  /** OUTDIAL_MAX_EVENT_LOOP_LAG_MS: past this event-loop lag (p99 over 2 s) the dispatcher claims nothing. */
  maxEventLoopLagMs: number;
  llmUrl: string | undefined;
  llmApiKey: string | undefined;
  llmModel: string | undefined;
  /** OpenAI-compatible /v1/audio/transcriptions for AI calls; unset: pocketsphinx. */
  sttUrl: string | undefined;
  sttApiKey: string | undefined;
  /** 'whisper-1' unless set. */
  sttModel: string | undefined;
  /** OpenAI-compatible /v1/audio/speech for AI calls; unset: espeak-ng. */
  ttsUrl: string | undefined;
  ttsApiKey: string | undefined;
  /** 'tts-1' unless set. */
  ttsModel: string | undefined;
  /**
   * OUTDIAL_MODEL_TIMEOUT_MS: how long a model server may take to start answering (the chat
   * model's first token, a transcription, the first audio byte) and may pause while streaming.
   */
  modelTimeoutMs: number;
  /** OUTDIAL_REALTIME_URL: an OpenAI Realtime API WebSocket (ws:// or wss://) for the realtime engine. */
  realtimeUrl: string | undefined;
  /** Sent as `Authorization: Bearer`. */
  realtimeApiKey: string | undefined;
  /** The `model` query parameter; 'gpt-realtime' unless set. */
  realtimeModel: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * LOG_FORMAT: `json` (one pino record a line, for collectors) or `pretty` (one short line a
   * record, one a request); unset: pretty when stdout is a terminal, json otherwise.
   */
  logFormat: 'json' | 'pretty';
  /** Credit minutes given to the demo user created on a first start with an empty database. */
  demoMinutes: number;
  /** Seed a demo user, agent and key into an empty database at start. */
  seedDemo: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function readNumber(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min)
    throw new ConfigError(`${name} must be a number ≥ ${min}, got "${raw}"`);
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function readUrl(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL: "${raw}"`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got "${url.protocol}"`);
  }
  return raw;
}

function readString(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

/** A comma-separated list; empty parts are dropped. */
/** An ISO 3166-1 alpha-2 code (any case) whose numbering plan libphonenumber knows, upper-cased. */
function readCountry(env: Env, name: string, fallback: CountryCode): CountryCode {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  const code = raw.toUpperCase();
  if (!isPhoneCountry(code)) {
    throw new ConfigError(
      `${name} must be an ISO 3166-1 alpha-2 country code with a known numbering plan, such as US, GB or DE, got "${raw}"`,
    );
  }
  return code;
}

function readList(env: Env, name: string): string[] {
  return (readString(env, name) ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/**
 * A speech server's URL, key and model (OUTDIAL_STT_* or OUTDIAL_TTS_*). The model defaults to
 * OpenAI's name, which Kokoro-FastAPI and whisper.cpp's server also accept; a key or model without
 * the URL is a mistake worth stopping for (the offline fallback would be used silently).
 */
function readSpeechServer(
  env: Env,
  prefix: 'OUTDIAL_STT' | 'OUTDIAL_TTS',
  defaultModel: string,
): { url: string | undefined; apiKey: string | undefined; model: string | undefined } {
  const url = readUrl(env, `${prefix}_URL`, ['http:', 'https:']);
  const apiKey = readString(env, `${prefix}_API_KEY`);
  const model = readString(env, `${prefix}_MODEL`);
  if (!url && (apiKey || model)) {
    const given = apiKey ? `${prefix}_API_KEY` : `${prefix}_MODEL`;
    throw new ConfigError(`${given} is set but ${prefix}_URL is not (the server to use)`);
  }
  return { url, apiKey, model: url ? (model ?? defaultModel) : undefined };
}

/**
 * The realtime engine's server (OUTDIAL_REALTIME_*). The model defaults to OpenAI's name, as the
 * speech servers' do; a key or model without the URL, or OUTDIAL_CONVERSATION_ENGINE=realtime
 * without it, stops the start (the engine would have nothing to talk to).
 */
function readRealtimeServer(env: Env): {
  url: string | undefined;
  apiKey: string | undefined;
  model: string | undefined;
} {
  const url = readUrl(env, 'OUTDIAL_REALTIME_URL', ['ws:', 'wss:']);
  const apiKey = readString(env, 'OUTDIAL_REALTIME_API_KEY');
  const model = readString(env, 'OUTDIAL_REALTIME_MODEL');
  if (!url && (apiKey || model)) {
    const given = apiKey ? 'OUTDIAL_REALTIME_API_KEY' : 'OUTDIAL_REALTIME_MODEL';
    throw new ConfigError(`${given} is set but OUTDIAL_REALTIME_URL is not (the server to use)`);
  }
  if (!url && readString(env, 'OUTDIAL_CONVERSATION_ENGINE') === 'realtime') {
    throw new ConfigError(
      'OUTDIAL_CONVERSATION_ENGINE=realtime needs OUTDIAL_REALTIME_URL (a ws:// or wss:// Realtime API server)',
    );
  }
  return { url, apiKey, model: url ? (model ?? 'gpt-realtime') : undefined };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOG_FORMATS = ['json', 'pretty'] as const;

/** `terminal`: whether stdout is a terminal, which decides LOG_FORMAT's default. */
export function loadConfig(env: Env = process.env, terminal = process.stdout.isTTY === true): Config {
  const port = readInt(env, 'PORT', 3000, 0, 65535);
  const host = readString(env, 'HOST') ?? '0.0.0.0';
  const provider = readString(env, 'OUTDIAL_VOICE_PROVIDER') ?? 'simulator';
  if (provider !== 'simulator') {
    throw new ConfigError(
      `OUTDIAL_VOICE_PROVIDER must be "simulator" (the only provider so far), got "${provider}"`,
    );
  }
  const delaysRaw = readString(env, 'OUTDIAL_WEBHOOK_RETRY_DELAYS_MS') ?? '1000,5000,25000';
  const delays = delaysRaw.split(',').map((part) => Number(part.trim()));
  if (delays.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new ConfigError(
      `OUTDIAL_WEBHOOK_RETRY_DELAYS_MS must be comma-separated milliseconds, got "${delaysRaw}"`,
    );
  }
  const jwtSecret = readString(env, 'OUTDIAL_JWT_SECRET');
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('OUTDIAL_JWT_SECRET must be at least 32 bytes long');
  }
  const encryptionKey = readString(env, 'OUTDIAL_ENCRYPTION_KEY');
  const previousEncryptionKeys = readList(env, 'OUTDIAL_PREVIOUS_ENCRYPTION_KEYS');
  if (
    [encryptionKey ?? 'x'.repeat(32), ...previousEncryptionKeys].some((key) => Buffer.byteLength(key) < 32)
  ) {
    throw new ConfigError(
      'OUTDIAL_ENCRYPTION_KEY and each of OUTDIAL_PREVIOUS_ENCRYPTION_KEYS must be at least 32 bytes long',
    );
  }
  const adminToken = readString(env, 'OUTDIAL_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('OUTDIAL_ADMIN_TOKEN must be at least 16 characters long');
  }
  if (readString(env, 'OUTDIAL_LLM_URL') && !readString(env, 'OUTDIAL_LLM_MODEL')) {
    throw new ConfigError('OUTDIAL_LLM_MODEL must be set when OUTDIAL_LLM_URL is (the model to ask)');
  }
  const realtime = readRealtimeServer(env);
  const stt = readSpeechServer(env, 'OUTDIAL_STT', 'whisper-1');
  const tts = readSpeechServer(env, 'OUTDIAL_TTS', 'tts-1');
  const logLevel = (readString(env, 'LOG_LEVEL') ?? 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const logFormat = (readString(env, 'LOG_FORMAT') ?? (terminal ? 'pretty' : 'json')) as Config['logFormat'];
  if (!LOG_FORMATS.includes(logFormat))
    throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${logFormat}"`);
  const displayHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  const publicUrl = (
    readUrl(env, 'OUTDIAL_PUBLIC_URL', ['http:', 'https:']) ?? `http://${displayHost}:${port}`
  ).replace(/\/+$/, '');

  const rtpRaw = readString(env, 'OUTDIAL_RTP_PORTS') ?? '40000-40999';
  const rtp = /^(\d+)-(\d+)$/.exec(rtpRaw);
  const rtpPorts: [number, number] = [Number(rtp?.[1]), Number(rtp?.[2])];
  if (!rtp || rtpPorts[0] < 1024 || rtpPorts[1] > 65535 || rtpPorts[1] - rtpPorts[0] < 1) {
    throw new ConfigError(
      `OUTDIAL_RTP_PORTS must be a range of at least two ports between 1024 and 65535 such as 40000-40999, got "${rtpRaw}"`,
    );
  }

  return {
    port,
    host,
    databaseUrl: readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: readUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    dataDir: path.resolve(readString(env, 'OUTDIAL_DATA_DIR') ?? './.outdial'),
    publicUrl,
    adminToken,
    jwtSecret,
    encryptionKey,
    previousEncryptionKeys,
    // 7 days: a link in a webhook or a dashboard tab outlives the webhook retries and a weekend.
    recordingUrlTtlHours: readInt(env, 'OUTDIAL_RECORDING_URL_TTL_HOURS', 168, 1, 8760),
    voiceProvider: 'simulator',
    simRingMs: readInt(env, 'OUTDIAL_SIM_RING_MS', 2000, 0, 600_000),
    simTalkMs: readInt(env, 'OUTDIAL_SIM_TALK_MS', 30_000, 0, 3_600_000),
    serviceRetryMs: readInt(
      env,
      'OUTDIAL_SERVICE_RETRY_MS',
      SERVICE_RETRY_FIRST_MS,
      100,
      SERVICE_RETRY_MAX_MS,
    ),
    breakers: readBreakerPolicy(env),
    simDialsDir: readString(env, 'OUTDIAL_SIM_DIALS_DIR')
      ? path.resolve(readString(env, 'OUTDIAL_SIM_DIALS_DIR') as string)
      : undefined,
    sipBindAddress: readString(env, 'OUTDIAL_SIP_BIND') ?? '0.0.0.0',
    sipPublicAddress: readString(env, 'OUTDIAL_SIP_PUBLIC_ADDRESS'),
    sipPort: readInt(env, 'OUTDIAL_SIP_PORT', 5060, 0, 65535),
    rtpPorts,
    sipRingTimeoutMs: readInt(env, 'OUTDIAL_SIP_RING_TIMEOUT_MS', 30_000, 1000, 300_000),
    maxCallSeconds: readInt(env, 'OUTDIAL_MAX_CALL_SECONDS', 600, 10, 14_400),
    amd: readBool(env, 'OUTDIAL_AMD', true),
    conversationEngine: readString(env, 'OUTDIAL_CONVERSATION_ENGINE') ?? 'auto',
    recordingRetentionDays: readString(env, 'OUTDIAL_RECORDING_RETENTION_DAYS')
      ? readInt(env, 'OUTDIAL_RECORDING_RETENTION_DAYS', 0, 1, 36_500)
      : null,
    webhookAllowPrivate: readBool(env, 'OUTDIAL_WEBHOOK_ALLOW_PRIVATE', false),
    webhookRetryDelaysMs: delays,
    webhookTimeoutMs: readInt(env, 'OUTDIAL_WEBHOOK_TIMEOUT_MS', 30_000, 100, 300_000),
    webhookConcurrency: readInt(env, 'OUTDIAL_WEBHOOK_CONCURRENCY', 100, 1, 10_000),
    metricsAllow: readList(env, 'OUTDIAL_METRICS_ALLOW'),
    estimatedMinutesPerCall: readNumber(env, 'OUTDIAL_ESTIMATED_MINUTES_PER_CALL', 1, 0),
    defaultCountry: readCountry(env, 'OUTDIAL_DEFAULT_COUNTRY', 'US'),
    maxConcurrentCalls: readInt(env, 'OUTDIAL_MAX_CONCURRENT_CALLS', 200, 1, 100_000),
    // 8: the `agent` bench on 2 cores kept engine share p95 ≤ 50 ms and barge-in stop p95 ≤ 300 ms
    // up to 8 AI calls at once, and missed the first at 12 (51 ms); docs/benchmarks.md.
    maxAiCalls: readInt(env, 'OUTDIAL_MAX_AI_CALLS', 8, 1, 10_000),
    // 150 ms: barge-in stopped within 85-145 ms p95 up to 8 calls against a 300 ms target, so an
    // event loop 150 ms late at p99 leaves no room for the rest (docs/decisions.md).
    maxEventLoopLagMs: readInt(env, 'OUTDIAL_MAX_EVENT_LOOP_LAG_MS', 150, 20, 60_000),
    llmUrl: readUrl(env, 'OUTDIAL_LLM_URL', ['http:', 'https:']),
    llmApiKey: readString(env, 'OUTDIAL_LLM_API_KEY'),
    llmModel: readString(env, 'OUTDIAL_LLM_MODEL'),
    sttUrl: stt.url,
    sttApiKey: stt.apiKey,
    sttModel: stt.model,
    ttsUrl: tts.url,
    ttsApiKey: tts.apiKey,
    ttsModel: tts.model,
    modelTimeoutMs: readInt(env, 'OUTDIAL_MODEL_TIMEOUT_MS', 10_000, 1000, 300_000),
    realtimeUrl: realtime.url,
    realtimeApiKey: realtime.apiKey,
    realtimeModel: realtime.model,
    logLevel,
    logFormat,
    demoMinutes: readInt(env, 'OUTDIAL_DEMO_MINUTES', 100, 0, 1_000_000),
    seedDemo: readBool(env, 'OUTDIAL_SEED_DEMO', true),
  };
}

/** OUTDIAL_BREAKER_*: each bounded, and the longest probe wait no shorter than the first. */
function readBreakerPolicy(env: Env): BreakerPolicy {
  const policy: BreakerPolicy = {
    threshold: readInt(env, 'OUTDIAL_BREAKER_THRESHOLD', DEFAULT_BREAKER_POLICY.threshold, 1, 1000),
    windowMs: readInt(env, 'OUTDIAL_BREAKER_WINDOW_MS', DEFAULT_BREAKER_POLICY.windowMs, 1000, 3_600_000),
    probeMs: readInt(env, 'OUTDIAL_BREAKER_PROBE_MS', DEFAULT_BREAKER_POLICY.probeMs, 100, 600_000),
    probeMaxMs: readInt(
      env,
      'OUTDIAL_BREAKER_PROBE_MAX_MS',
      DEFAULT_BREAKER_POLICY.probeMaxMs,
      100,
      3_600_000,
    ),
  };
  if (policy.probeMaxMs < policy.probeMs) {
    throw new ConfigError(
      `OUTDIAL_BREAKER_PROBE_MAX_MS (${policy.probeMaxMs}) must be at least OUTDIAL_BREAKER_PROBE_MS (${policy.probeMs})`,
    );
  }
  return policy;
}
