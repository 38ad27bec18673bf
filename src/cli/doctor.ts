/**
 * `outdial doctor [--json]`: checks a deployment from the command line, with the configuration
 * `outdial serve` reads (issue 24 §4). Each check asks its dependency a real question (a query, a
 * PING, a chat completion with a tool call, speech there and back, a realtime session, SIP OPTIONS,
 * an HTTP request) within its timeout, and says what it found and, when that is not ok, the fix.
 * Loaded only by this command (cli/index.ts): the client commands stay fast.
 */
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { OpenAiChatModel } from '../adapters/models/chat.js';
import { ModelError } from '../adapters/models/errors.js';
import { buildVoiceModels, modelEndpoints } from '../adapters/models/index.js';
import type { DatabaseHandle } from '../adapters/postgres/database.js';
import { pendingMigrations, versionRange } from '../adapters/postgres/migrate.js';
import { pgStore } from '../adapters/postgres/store.js';
import { DependencyProbes, probeEndpoints } from '../adapters/probes.js';
import { speechToolsAvailable } from '../adapters/speech/tools.js';
import { sipOptions } from '../adapters/voice/sip/options.js';
import { type Config, loadConfig } from '../config.js';
import { modelDependency } from '../domain/dependencies.js';
import { DataDirLockedError } from '../start-errors.js';
import type { Store } from '../store/index.js';
import type { SipTrunkRow } from '../store/sip-trunks.js';
import { concatPcm } from '../voice/audio/pcm.js';
import { WebhookForbiddenError, webhookDispatcher } from '../webhooks/address-guard.js';
import { openConfiguredDatabase } from '../wiring/storage.js';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

/** One line of the report: `fix` for anything not ok, `latencyMs` where a round trip was timed. */
export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
  latencyMs?: number;
}

/** The whole report: `fail` when any check failed, else `warn` when any warned, else `ok`. */
export interface DoctorReport {
  status: 'ok' | 'warn' | 'fail';
  checks: CheckResult[];
}

export interface DoctorOptions {
  json?: boolean;
  /** A webhook URL to reach out to, instead of the ones deliveries went to lately. */
  webhookUrl?: string;
  /** Milliseconds each check may take (default CHECK_TIMEOUT_MS). */
  timeout?: number;
}

/** How long one check may take: doctor never hangs on a dependency that does not answer. */
export const CHECK_TIMEOUT_MS = 5000;
/** Free space below this in the data dir (recordings, the embedded database) warns... */
export const DISK_WARN_BYTES = 1024 ** 3;
/** ...and below this fails: a few minutes of recordings or one migration could fill it. */
export const DISK_FAIL_BYTES = 100 * 1024 ** 2;
/** The webhook URLs checked without --webhook-url: those deliveries were queued for lately. */
export const RECENT_WEBHOOK_DAYS = 7;
export const RECENT_WEBHOOK_URLS = 5;
/** The longest an OPTIONS waits (timer E reaches T2 by then), within the check's own timeout. */
const OPTIONS_TIMEOUT_MS = 4000;
/** Why the trunks and webhooks checks did not read the database. */
const UNREAD = 'the database could not be read, or is not migrated (see database)';
/** What the speech check says and expects to hear back. */
const SPEECH_PHRASE = 'hello, this is a test';

/** `outdial doctor`: prints the report (text or JSON) and returns the exit code (1 when a check failed). */
export async function runDoctor(options: DoctorOptions): Promise<number> {
  const report = await diagnose(loadConfig(), options);
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : reportText(report));
  return report.status === 'fail' ? 1 : 0;
}

/** Runs every check (the database first: the trunks and webhook checks read it). */
export async function diagnose(config: Config, options: DoctorOptions = {}): Promise<DoctorReport> {
  const timeoutMs = options.timeout ?? CHECK_TIMEOUT_MS;
  const opened = await guarded('database', timeoutMs, () => checkDatabase(config));
  const database = opened.database;
  // The trunks and webhooks are read only from a database whose tables are all there.
  const store = database && opened.migrated ? pgStore(database.db, database.kind) : null;
  try {
    const rest = await Promise.all([
      guarded('cache', timeoutMs, () => checkCache(config)),
      guarded('llm', timeoutMs, () => checkLlm(config, timeoutMs)),
      guarded('stt-tts', timeoutMs, () => checkSpeech(config, timeoutMs)),
      guarded('realtime', timeoutMs, () => checkRealtime(config, timeoutMs)),
      guarded('trunks', timeoutMs, () => checkTrunks(store, timeoutMs)),
      guarded('public-url', timeoutMs, () => checkPublicUrl(config, timeoutMs)),
      guarded('webhook-egress', timeoutMs, () => checkWebhooks(config, store, options.webhookUrl, timeoutMs)),
      guarded('disk', timeoutMs, () => checkDisk(config)),
    ]);
    const checks = [...opened.results, ...rest.flatMap((outcome) => outcome.results)];
    return { status: overall(checks), checks };
  } finally {
    await database?.close().catch(() => {});
  }
}

function overall(checks: CheckResult[]): DoctorReport['status'] {
  if (checks.some((check) => check.status === 'fail')) return 'fail';
  return checks.some((check) => check.status === 'warn') ? 'warn' : 'ok';
}

/** The report as text: one line per check, then a summary line. */
export function reportText(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((check) => check.name.length));
  const lines = report.checks.map(
    (check) =>
      `${check.status.padEnd(4)}  ${check.name.padEnd(width)}  ${check.detail}${check.fix ? ` | fix: ${check.fix}` : ''}`,
  );
  const count = (status: CheckStatus) => report.checks.filter((check) => check.status === status).length;
  lines.push(
    `doctor: ${report.status} (${count('ok')} ok, ${count('warn')} warn, ${count('fail')} fail, ${count('skip')} skip)`,
  );
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// Running a check

/** What a check found: its lines, and (the database check) what it opened. */
interface Outcome {
  results: CheckResult[];
  database?: DatabaseHandle | null;
  /** Whether every migration is applied (the repositories' tables are all there). */
  migrated?: boolean;
}

/** Runs `check` within `timeoutMs`: a check that takes longer, or throws, is one failed line. */
async function guarded(
  name: string,
  timeoutMs: number,
  check: () => Promise<Outcome | CheckResult[] | CheckResult>,
): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          name,
          status: 'fail',
          detail: `no answer within ${timeoutMs} ms`,
          fix: `the ${name} check's dependency is slow or hangs; --timeout <ms> waits longer`,
        }),
      timeoutMs,
    );
  });
  try {
    const found = await Promise.race([check(), late]);
    if ('results' in found) return found;
    return { results: Array.isArray(found) ? found : [found] };
  } catch (error) {
    return { results: [{ name, status: 'fail', detail: messageOf(error), fix: 'see the detail' }] };
  } finally {
    clearTimeout(timer);
  }
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? error.cause : null;
  return cause ? `${error.message}: ${cause.message}` : error.message;
}

/** Milliseconds `work` took, with its result. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; latencyMs: number }> {
  const started = performance.now();
  const value = await work();
  return { value, latencyMs: Math.round(performance.now() - started) };
}

// ---------------------------------------------------------------------------------------------
// database, cache

async function checkDatabase(config: Config): Promise<Outcome> {
  const name = 'database';
  const pgliteDir = path.join(config.dataDir, 'pgdata');
  if (!config.databaseUrl && !fs.existsSync(path.join(pgliteDir, 'PG_VERSION'))) {
    return {
      database: null,
      results: [
        {
          name,
          status: 'warn',
          detail: `no embedded database yet in ${pgliteDir}`,
          fix: 'run outdial serve (or outdial migrate) once to create it, or set DATABASE_URL',
        },
      ],
    };
  }
  let database: DatabaseHandle;
  try {
    database = await openConfiguredDatabase(config, () => {});
  } catch (error) {
    return { database: null, results: [databaseFailure(config, error)] };
  }
  const { latencyMs } = await timed(() => database.ping());
  const pending = await pendingMigrations(database);
  const found = `${database.kind} answered in ${latencyMs} ms`;
  const result: CheckResult =
    pending.length > 0
      ? {
          name,
          status: 'warn',
          detail: `${found}; migrations ${versionRange(pending)} not applied`,
          fix: 'run outdial migrate (outdial serve applies them at start)',
          latencyMs,
        }
      : { name, status: 'ok', detail: `${found}; migrations up to date`, latencyMs };
  return { database, migrated: pending.length === 0, results: [result] };
}

function databaseFailure(config: Config, error: unknown): CheckResult {
  if (error instanceof DataDirLockedError) {
    return {
      name: 'database',
      status: 'warn',
      detail: `the embedded database in ${error.dir} is open in outdial (process ${error.pid}); PGlite opens in one process only, so doctor cannot read it`,
      fix: 'stop that outdial to check the database, trunks and webhooks too, or use PostgreSQL (DATABASE_URL)',
    };
  }
  return {
    name: 'database',
    status: 'fail',
    detail: messageOf(error),
    fix: config.databaseUrl
      ? 'start PostgreSQL, or correct DATABASE_URL (host, port, database, user)'
      : `check that ${config.dataDir} is readable and writable by this user`,
  };
}

async function checkCache(config: Config): Promise<CheckResult> {
  if (!config.redisUrl) {
    return {
      name: 'cache',
      status: 'ok',
      detail: 'in-memory (no REDIS_URL: one process holds the live state)',
    };
  }
  const { RedisLiveCache } = await import('../adapters/redis/live-cache.js');
  const cache = new RedisLiveCache({ url: config.redisUrl });
  try {
    if (!(await cache.waitReady(CHECK_TIMEOUT_MS - 500))) {
      return {
        name: 'cache',
        status: 'fail',
        detail: `Redis did not answer: ${cache.lastError?.message ?? 'no answer'}`,
        fix: 'start Redis, or correct REDIS_URL',
      };
    }
    const { value, latencyMs } = await timed(() => cache.redis.ping());
    return { name: 'cache', status: 'ok', detail: `Redis answered ${value} in ${latencyMs} ms`, latencyMs };
  } finally {
    await cache.close().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// models

/** The fix for a model server at `at` that failed, from how it failed. */
function modelFix(
  error: unknown,
  at: string,
  variables: { url: string; key: string; model: string },
): string {
  const status = error instanceof ModelError ? error.status : undefined;
  if (status === 401 || status === 403) return `check ${variables.key}`;
  if (status === 404) return `check ${variables.url} (the base URL, …/v1) and ${variables.model}`;
  if (status !== undefined) return `the server at ${at} answered ${status}: see its logs`;
  return `start the model server at ${at}, or correct ${variables.url}`;
}

const LLM_VARIABLES = { url: 'OUTDIAL_LLM_URL', key: 'OUTDIAL_LLM_API_KEY', model: 'OUTDIAL_LLM_MODEL' };

async function checkLlm(config: Config, timeoutMs: number): Promise<CheckResult> {
  const name = 'llm';
  const endpoint = modelEndpoints(config).llm;
  if (!endpoint) {
    return {
      name,
      status: 'skip',
      detail: 'no chat model (OUTDIAL_LLM_URL is not set)',
      fix: 'set OUTDIAL_LLM_URL and OUTDIAL_LLM_MODEL to use the LLM engine',
    };
  }
  const chat = new OpenAiChatModel({ ...endpoint, firstTokenTimeoutMs: timeoutMs, idleTimeoutMs: timeoutMs });
  try {
    const { value: called, latencyMs } = await timed(() => askForToolCall(chat));
    if (!called) {
      return {
        name,
        status: 'warn',
        detail: `${endpoint.model} answered but called no tool (agents' tools, end and transfer need tool calls)`,
        fix: 'use a model with tool calling, or turn it on in the server (vLLM: --enable-auto-tool-choice)',
        latencyMs,
      };
    }
    return { name, status: 'ok', detail: `${endpoint.model} called ${called} in ${latencyMs} ms`, latencyMs };
  } catch (error) {
    return {
      name,
      status: 'fail',
      detail: messageOf(error),
      fix: modelFix(error, endpoint.url, LLM_VARIABLES),
    };
  } finally {
    await chat.close();
  }
}

/** A chat completion that must call a tool: the tool's name when it did, null when it only spoke. */
async function askForToolCall(chat: OpenAiChatModel): Promise<string | null> {
  const tool = {
    type: 'function' as const,
    function: {
      name: 'check_time',
      description: 'Tells the current time in a time zone.',
      parameters: {
        type: 'object',
        properties: { zone: { type: 'string', description: 'An IANA time zone, e.g. UTC' } },
        required: ['zone'],
      },
    },
  };
  const deltas = chat.stream({
    messages: [
      { role: 'system', content: 'You answer by calling the tool you are given.' },
      { role: 'user', content: 'What time is it in UTC?' },
    ],
    tools: [tool],
    toolChoice: 'required',
  });
  for await (const delta of deltas) {
    if (delta.type === 'tool_call') return delta.call.function.name;
  }
  return null;
}

async function checkSpeech(config: Config, timeoutMs: number): Promise<CheckResult> {
  const name = 'stt-tts';
  const { stt, tts } = modelEndpoints(config);
  if (!stt && !tts) return checkSpeechTools();
  const models = buildVoiceModels({ llm: null, stt, tts, timeoutMs });
  const started = performance.now();
  try {
    let audio: Int16Array;
    try {
      const pieces: Int16Array[] = [];
      for await (const piece of models.tts.synthesize(SPEECH_PHRASE)) pieces.push(piece);
      audio = concatPcm(pieces);
    } catch (error) {
      return speechFailure(
        'text-to-speech',
        models.tts.name,
        error,
        tts ? { prefix: 'OUTDIAL_TTS', url: tts.url } : null,
      );
    }
    let heard: string;
    try {
      heard = await models.stt.transcribe(audio);
    } catch (error) {
      return speechFailure(
        'speech-to-text',
        models.stt.name,
        error,
        stt ? { prefix: 'OUTDIAL_STT', url: stt.url } : null,
      );
    }
    const latencyMs = Math.round(performance.now() - started);
    const sides = `tts ${models.tts.name}, stt ${models.stt.name}`;
    if (heard === '') {
      return {
        name,
        status: 'warn',
        detail: `speech-to-text heard nothing in ${audio.length / 8000} s of "${SPEECH_PHRASE}" (${sides})`,
        fix: 'check OUTDIAL_STT_MODEL (an English-capable model) and OUTDIAL_TTS_MODEL',
        latencyMs,
      };
    }
    return { name, status: 'ok', detail: `heard "${heard}" (${sides}, ${latencyMs} ms)`, latencyMs };
  } finally {
    await models.close();
  }
}

function speechFailure(
  side: string,
  port: string,
  error: unknown,
  server: { prefix: 'OUTDIAL_TTS' | 'OUTDIAL_STT'; url: string } | null,
): CheckResult {
  const fix = server
    ? modelFix(error, server.url, {
        url: `${server.prefix}_URL`,
        key: `${server.prefix}_API_KEY`,
        model: `${server.prefix}_MODEL`,
      })
    : `install ${port === 'espeak-ng' ? 'espeak-ng' : 'pocketsphinx and pocketsphinx-en-us'}, or set ${side === 'text-to-speech' ? 'OUTDIAL_TTS_URL' : 'OUTDIAL_STT_URL'}`;
  return { name: 'stt-tts', status: 'fail', detail: `${side} (${port}) failed: ${messageOf(error)}`, fix };
}

/** No speech server configured: the offline tools are what calls will use. */
async function checkSpeechTools(): Promise<CheckResult> {
  const tools = speechToolsAvailable();
  if (tools.missing.length > 0) {
    return {
      name: 'stt-tts',
      status: 'fail',
      detail: `no speech servers configured, and the offline tools are missing: ${tools.missing.join(', ')}`,
      fix: `install ${tools.missing.join(', ')}, or set OUTDIAL_STT_URL and OUTDIAL_TTS_URL`,
    };
  }
  return { name: 'stt-tts', status: 'ok', detail: 'offline: espeak-ng and pocketsphinx are installed' };
}

async function checkRealtime(config: Config, timeoutMs: number): Promise<CheckResult> {
  const name = 'realtime';
  const endpoints = probeEndpoints(config);
  const endpoint = endpoints.realtime;
  if (!endpoint) {
    return {
      name,
      status: 'skip',
      detail: 'no realtime server (OUTDIAL_REALTIME_URL is not set)',
      fix: 'set OUTDIAL_REALTIME_URL to use the realtime engine',
    };
  }
  const probes = new DependencyProbes({ endpoints, trunks: { forDialing: async () => null } });
  try {
    const { latencyMs } = await timed(() =>
      probes.probe(modelDependency('realtime', endpoint), { timeoutMs: timeoutMs - 250 }),
    );
    return {
      name,
      status: 'ok',
      detail: `session.created from ${endpoint.url} in ${latencyMs} ms`,
      latencyMs,
    };
  } catch (error) {
    return {
      name,
      status: 'fail',
      detail: messageOf(error),
      fix: `start the realtime server at ${endpoint.url}, or correct OUTDIAL_REALTIME_URL and OUTDIAL_REALTIME_API_KEY`,
    };
  } finally {
    await probes.close();
  }
}

// ---------------------------------------------------------------------------------------------
// trunks, public URL, webhooks, disk

async function checkTrunks(store: Store | null, timeoutMs: number): Promise<CheckResult[]> {
  if (!store) return [{ name: 'trunks', status: 'skip', detail: UNREAD, fix: 'see database' }];
  const trunks = await store.sipTrunks.listInUse();
  if (trunks.length === 0) {
    return [
      {
        name: 'trunks',
        status: 'skip',
        detail: 'no active agent dials through a SIP trunk',
        fix: 'outdial agents create … --sip-trunk <trunkId> to dial through one',
      },
    ];
  }
  const optionsTimeout = Math.max(100, Math.min(OPTIONS_TIMEOUT_MS, timeoutMs - 250));
  return Promise.all(trunks.map((trunk) => checkTrunk(trunk, optionsTimeout)));
}

/** OPTIONS to one trunk: any answer but a 5xx or 6xx is a trunk that is there. */
async function checkTrunk(trunk: SipTrunkRow, timeoutMs: number): Promise<CheckResult> {
  const name = `trunk ${trunk.id}`;
  const where = `${trunk.name} at ${trunk.host}:${trunk.port}`;
  try {
    const answer = await sipOptions({ host: trunk.host, port: trunk.port }, { timeoutMs });
    const status = `${answer.status} ${answer.reason}`.trim();
    if (answer.status >= 500) {
      return {
        name,
        status: 'fail',
        detail: `${where} answered OPTIONS with ${status}`,
        fix: 'the trunk refuses service: check it with the carrier or PBX',
        latencyMs: answer.latencyMs,
      };
    }
    return {
      name,
      status: 'ok',
      detail: `${where} answered OPTIONS with ${status} in ${answer.latencyMs} ms`,
      latencyMs: answer.latencyMs,
    };
  } catch (error) {
    return {
      name,
      status: 'fail',
      detail: `${where}: ${messageOf(error)}`,
      fix: `check the trunk's host and port (outdial sip-trunks update ${trunk.id} --host … --port …) and that UDP reaches it from this host`,
    };
  }
}

async function checkPublicUrl(config: Config, timeoutMs: number): Promise<CheckResult> {
  const name = 'public-url';
  const url = `${config.publicUrl}/api/v1/health`;
  try {
    const { value: response, latencyMs } = await timed(() =>
      request(url, { method: 'GET', signal: AbortSignal.timeout(timeoutMs - 250) }),
    );
    await response.body.dump();
    const found = `GET ${url} answered ${response.statusCode} in ${latencyMs} ms`;
    // 401: the API is there (the health report asks for an API key); 200: and it said so.
    if (response.statusCode === 200 || response.statusCode === 401) {
      return { name, status: 'ok', detail: found, latencyMs };
    }
    return {
      name,
      status: 'warn',
      detail: response.statusCode === 503 ? `${found} (degraded: its database or cache is down)` : found,
      fix:
        response.statusCode === 503
          ? 'see the server’s logs'
          : `check OUTDIAL_PUBLIC_URL: something other than outdial answers at ${config.publicUrl}`,
      latencyMs,
    };
  } catch (error) {
    return {
      name,
      status: 'warn',
      detail: `no server answers at ${config.publicUrl}: ${messageOf(error)}`,
      fix: 'start outdial serve (doctor may run before it), or set OUTDIAL_PUBLIC_URL to where it runs',
    };
  }
}

async function checkWebhooks(
  config: Config,
  store: Store | null,
  given: string | undefined,
  timeoutMs: number,
): Promise<CheckResult[]> {
  const name = 'webhook-egress';
  const since = new Date(Date.now() - RECENT_WEBHOOK_DAYS * 24 * 3600_000);
  const urls = given
    ? [given]
    : store
      ? await store.webhookDeliveries.recentUrls(since, RECENT_WEBHOOK_URLS)
      : [];
  if (urls.length === 0) {
    return [
      {
        name,
        status: 'skip',
        detail: store ? `no webhook was queued in the last ${RECENT_WEBHOOK_DAYS} days` : UNREAD,
        fix: 'pass --webhook-url <url> to check one',
      },
    ];
  }
  const dispatcher = webhookDispatcher({
    allowPrivate: config.webhookAllowPrivate,
    connectTimeoutMs: timeoutMs,
  });
  try {
    return await Promise.all(urls.map((url) => checkWebhook(url, dispatcher, timeoutMs)));
  } finally {
    await dispatcher.close();
  }
}

/** A HEAD request through the webhook client: any HTTP answer means webhooks get out to `url`. */
async function checkWebhook(
  url: string,
  dispatcher: ReturnType<typeof webhookDispatcher>,
  timeoutMs: number,
): Promise<CheckResult> {
  const name = 'webhook-egress';
  try {
    const { value: response, latencyMs } = await timed(() =>
      request(url, { method: 'HEAD', dispatcher, signal: AbortSignal.timeout(timeoutMs - 250) }),
    );
    await response.body.dump();
    return {
      name,
      status: 'ok',
      detail: `HEAD ${url} answered ${response.statusCode} in ${latencyMs} ms`,
      latencyMs,
    };
  } catch (error) {
    const forbidden =
      error instanceof WebhookForbiddenError || (error as Error).cause instanceof WebhookForbiddenError;
    return {
      name,
      status: 'fail',
      detail: `${url}: ${messageOf(error)}`,
      fix: forbidden
        ? 'webhooks may not reach private addresses; OUTDIAL_WEBHOOK_ALLOW_PRIVATE=true allows it (trusted networks only)'
        : `check that ${new URL(url).host} is reachable from this host (DNS, firewall, proxy) and that its server runs`,
    };
  }
}

async function checkDisk(config: Config): Promise<CheckResult> {
  const name = 'disk';
  let dir = config.dataDir;
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const stats = await fs.promises.statfs(dir);
  const free = stats.bavail * stats.bsize;
  const found = `${formatBytes(free)} free in ${dir} (recordings and the embedded database)`;
  const fix = 'free space there, move OUTDIAL_DATA_DIR, or set OUTDIAL_RECORDING_RETENTION_DAYS';
  if (free < DISK_FAIL_BYTES) return { name, status: 'fail', detail: found, fix };
  if (free < DISK_WARN_BYTES) return { name, status: 'warn', detail: found, fix };
  return { name, status: 'ok', detail: found };
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  return `${Math.round(bytes / 1024 ** 2)} MiB`;
}
