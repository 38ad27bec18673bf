import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { type ColumnType, type Generated, Kysely, PostgresDialect, type RawBuilder, sql } from 'kysely';
import type { CustomTypesConfig } from 'pg';
import type { EndedReason, ToolCallRecord, TurnMetrics } from '../../domain/agent-call.js';
import type { BatchContactState, CallingWindow, ConsentRecord, PauseReason } from '../../domain/batch.js';
import type { CallChannel, CallStatus, TranscriptEntry } from '../../domain/call.js';
import type { FailureSource } from '../../domain/failure.js';
import type { WebhookDeliveryStatus } from '../../domain/webhooks.js';
import type { DialState } from '../../ports.js';
import { DataDirLockedError } from '../../start-errors.js';
import type { BatchRow } from '../../store/batches.js';
import type { SipTrunkRow } from '../../store/sip-trunks.js';
import { PGliteDialect } from './pglite-dialect.js';
import { BUNDLED_IMAGE_DIR, checkImage, clearUnpacked, unpackImage } from './pglite-image.js';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** JSON columns are written through `json()` below and read back as parsed values. */
type Json<T> = ColumnType<T, RawBuilder<unknown> | undefined, RawBuilder<unknown>>;

export interface UsersTable {
  id: string;
  name: string;
  email: string | null;
  available_minutes: Generated<number>;
  max_concurrent_calls: Generated<number>;
  /** ISO 3166-1 alpha-2: the country numbers without + are read in; null: OUTDIAL_DEFAULT_COUNTRY. */
  default_country: Generated<string | null>;
  webhook_secret: string;
  previous_webhook_secret: string | null;
  webhook_secret_rotated_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  created_at: Timestamp;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
}

export interface DashboardSessionsTable {
  /** SHA-256 (hex) of the session cookie's token. */
  id: string;
  user_id: string;
  key_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface AgentsTable {
  id: string;
  user_id: string;
  name: string;
  type: Generated<'OUTBOUND' | 'INBOUND'>;
  is_active: Generated<boolean>;
  basic_details: Json<Record<string, unknown>>;
  metric_config: Json<Record<string, unknown>>;
  sip_trunk_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ContactsTable {
  id: string;
  user_id: string;
  phone_number: string;
  name: Generated<string>;
  email: string | null;
  company: string | null;
  metadata: Json<Record<string, unknown>>;
  /** The contact's own IANA zone, when a batch gave one (issue 15). */
  timezone: ColumnType<string | null, string | null | undefined, string | null>;
  /** The consent record the latest batch gave: {source, obtainedAt, text?} (issue 15). */
  consent: Json<ConsentRecord | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CallsTable {
  id: string;
  user_id: string;
  agent_id: string;
  contact_id: string;
  batch_id: string | null;
  batch_seq: ColumnType<number | null, number | null | undefined, number | null>;
  status: CallStatus;
  direction: Generated<string>;
  phone_number: string;
  attempt: Generated<number>;
  provider: string;
  error: string | null;
  duration: number | null;
  minutes_charged: Generated<number>;
  transcription: Json<TranscriptEntry[] | null>;
  summary: string | null;
  metric_json: Json<Record<string, unknown> | null>;
  status_callback_url: string | null;
  /** The events statusCallBackUrl hears of (null: ["call.completed"]). */
  status_callback_events: Json<string[] | null>;
  analysis_status: ColumnType<
    'pending' | 'done' | 'failed' | null,
    'pending' | 'done' | 'failed' | null | undefined,
    'pending' | 'done' | 'failed' | null
  >;
  analysis_attempts: Generated<number>;
  analysis_due_at: NullableTimestamp;
  analyzer: ColumnType<string | null, string | null | undefined, string | null>;
  sip_code: ColumnType<number | null, number | null | undefined, number | null>;
  variables: Json<Record<string, string> | null>;
  ended_reason: ColumnType<EndedReason | null, EndedReason | null | undefined, EndedReason | null>;
  /** Whose failure the call was (migration 018, domain/failure.ts); null when it did not fail. */
  failure_source: ColumnType<FailureSource | null, FailureSource | null | undefined, FailureSource | null>;
  turns: Json<TurnMetrics[] | null>;
  tool_calls: Json<ToolCallRecord[] | null>;
  /** 'web': a browser's call from the dashboard (migration 015); 'phone': every other. */
  channel: ColumnType<CallChannel, CallChannel | undefined, CallChannel>;
  created_at: Timestamp;
  answered_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  updated_at: Timestamp;
}

/** The port's row (src/store/batches.ts), with what the database fills in and the JSON columns. */
export interface BatchesTable
  extends Omit<
    BatchRow,
    | 'scheduled_start_at'
    | 'tags'
    | 'webhooks'
    | 'duplicates'
    | 'ingested'
    | 'processed'
    | 'succeeded'
    | 'failed'
    | 'cancelled_jobs'
    | 'ingest_lease_until'
    | 'ingest_passes'
    | 'paused_at'
    | 'pause_reason'
    | 'paused_dependency'
    | 'calling_window'
    | 'require_consent'
    | 'retry_on_voicemail'
    | 'suppressed'
    | 'skipped'
    | 'created_at'
    | 'started_at'
    | 'completed_at'
    | 'updated_at'
  > {
  scheduled_start_at: NullableTimestamp;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  webhooks: Json<Record<string, string> | null>;
  duplicates: Generated<number>;
  ingested: Generated<number>;
  processed: Generated<number>;
  succeeded: Generated<number>;
  failed: Generated<number>;
  cancelled_jobs: Generated<number>;
  ingest_lease_until: NullableTimestamp;
  ingest_passes: Generated<number>;
  paused_at: NullableTimestamp;
  pause_reason: ColumnType<PauseReason | null, PauseReason | null | undefined, PauseReason | null>;
  paused_dependency: ColumnType<string | null, string | null | undefined, string | null>;
  calling_window: Json<CallingWindow | null>;
  require_consent: Generated<boolean>;
  retry_on_voicemail: Generated<boolean>;
  suppressed: Generated<number>;
  skipped: Generated<number>;
  created_at: Timestamp;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  updated_at: Timestamp;
}

export interface BatchPayloadsTable {
  batch_id: string;
  body: string;
}

export interface BatchContactsTable {
  batch_id: string;
  seq: number;
  contact_id: string;
  phone_number: string;
  state: BatchContactState;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  lease_until: NullableTimestamp;
  call_id: string | null;
  outcome: string | null;
  /** The zone the calling window is read in for this contact (issue 15). */
  timezone: ColumnType<string | null, string | null | undefined, string | null>;
  /** A queued contact waiting for its calling window (next_attempt_at is the opening). */
  window_wait: Generated<boolean>;
  /** Service failures of its calls in a row (migration 018): the backoff of its next try. */
  service_failures: Generated<number>;
}

export interface SuppressionsTable {
  user_id: string;
  phone_number: string;
  reason: string | null;
  source_call_id: string | null;
  created_at: Generated<Date>;
}

export interface IdempotencyKeysTable {
  user_id: string;
  key: string;
  request_hash: string;
  state: 'running' | 'done';
  locked_until: NullableTimestamp;
  response_status: number | null;
  response_body: Json<unknown>;
  resource_id: string | null;
  created_at: Generated<Date>;
}

// The type lives in the domain; named here too for the adapter's and services' imports.
export type { WebhookDeliveryStatus };

export interface WebhookDeliveriesTable {
  id: string;
  user_id: string;
  event: string;
  url: string;
  body: string;
  batch_id: string | null;
  call_id: string | null;
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  last_status: number | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  delivered_at: NullableTimestamp;
}

/** The port's row (src/store/sip-trunks.ts), with the timestamps the database fills in. */
export interface SipTrunksTable extends Omit<SipTrunkRow, 'created_at' | 'updated_at'> {
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** Dial records (migration 007): written and read through src/adapters/postgres/dial-records.ts. */
export interface DialsTable {
  call_id: string;
  owner: string;
  provider: string;
  state: DialState;
  created_at: Timestamp;
  sent_at: NullableTimestamp;
  answered_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  outcome: Json<Record<string, unknown> | null>;
}

/** One circuit breaker per dependency (migration 019). */
export interface BreakersTable {
  key: string;
  kind: string;
  name: string;
  state: Generated<string>;
  failures: Generated<number>;
  streak_started_at: NullableTimestamp;
  opened_at: NullableTimestamp;
  next_probe_at: NullableTimestamp;
  probes: Generated<number>;
  last_success_at: NullableTimestamp;
  last_failure_at: NullableTimestamp;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  latency_ms: ColumnType<number | null, number | null | undefined, number | null>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** One lease per running process (migration 007). */
export interface DialOwnersTable {
  id: string;
  host: string;
  pid: number;
  started_at: Timestamp;
  renewed_at: Timestamp;
  lease_until: Timestamp;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: Timestamp;
}

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  dashboard_sessions: DashboardSessionsTable;
  agents: AgentsTable;
  contacts: ContactsTable;
  calls: CallsTable;
  batches: BatchesTable;
  batch_payloads: BatchPayloadsTable;
  batch_contacts: BatchContactsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  sip_trunks: SipTrunksTable;
  dials: DialsTable;
  dial_owners: DialOwnersTable;
  schema_migrations: SchemaMigrationsTable;
  suppressions: SuppressionsTable;
  idempotency_keys: IdempotencyKeysTable;
  breakers: BreakersTable;
}

export type Db = Kysely<Database>;

/**
 * A JSON value as a SQL parameter. It is sent as text and cast in SQL, because pg turns a JS array
 * into a Postgres array literal and PGlite serialises by the parameter's inferred type: text is the
 * one form both drivers pass through unchanged.
 */
export function json(value: unknown): RawBuilder<unknown> {
  return sql`${JSON.stringify(value)}::text::jsonb`;
}

export interface DatabaseHandle {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** Round trip used by health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  databaseUrl: string | undefined;
  /** Where PGlite keeps its files when there is no DATABASE_URL. */
  pgliteDir: string;
  /** PostgreSQL only: the schema to work in (tests give each file its own). */
  schema?: string;
  poolSize?: number;
  /**
   * PGlite only: the folder of the pre-initialised image a new data dir is made from (default: the
   * bundled one); null runs PGlite's initdb instead (how the image itself is made).
   */
  pgliteImage?: string | null;
  /** Lines that say what a first start is doing (creating the embedded database takes a moment). */
  onProgress?: Progress;
}

/** A line for the person starting outdial; 'warn' when something did not go as it should. */
export type Progress = (line: string, level: 'info' | 'warn') => void;

const INT8_OID = 20;

export async function openDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options);
  const image = options.pgliteImage === undefined ? BUNDLED_IMAGE_DIR : options.pgliteImage;
  return openPglite(options.pgliteDir, image, options.onProgress ?? (() => {}));
}

/** pg is imported here, when a DATABASE_URL is given: the embedded path never carries it (~5 MB). */
async function openPostgres(url: string, options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // count(*) and sums are int8; every such value here is far below 2^53.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format ?? 'text'),
    } as CustomTypesConfig,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client that loses its server emits 'error'; the pool replaces it on next use.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: 'postgres',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

/**
 * The embedded database's buffer cache. PostgreSQL's default (128 MB) is sized for a server of its
 * own; in our process it costs ~125 MB of resident memory at every start. 32 MB keeps a 100,000-
 * contact ingestion at full speed (the OS page cache holds the rest) and the process lean.
 */
const PGLITE_SHARED_BUFFERS = '32MB';
const PGLITE_DEFAULT_START_PARAMS: string[] =
  (PGlite as unknown as { defaultStartParams?: string[] }).defaultStartParams ?? [];

/**
 * V8 compiles PGlite's busiest WebAssembly functions a second time with its optimising compiler, on
 * background threads, by default several at once; each compilation holds tens of MB of working
 * memory that the process keeps. That, not PGlite's heap, is what a first start's migrations cost
 * (a bare process opening the image and migrating: 265-277 MB, with one compilation at a time
 * 193-211 MB, with no optimising compiler at all 167 MB). One at a time, for `outdial serve` on a
 * new data dir: peak RSS at ready 329-345 -> 255-266 MB in most runs, the migrations no slower, a
 * 100,000-contact ingestion within the machine's noise (docs/benchmarks.md). It is process-wide
 * and set before PGlite's module is compiled; undici's small HTTP parser is the only other
 * WebAssembly here.
 */
const WASM_COMPILATION_FLAGS = '--wasm-num-compilation-tasks=1';

async function openPglite(dir: string, image: string | null, progress: Progress): Promise<DatabaseHandle> {
  v8.setFlagsFromString(WASM_COMPILATION_FLAGS);
  fs.mkdirSync(dir, { recursive: true });
  const releaseLock = lockDataDir(dir);
  let pglite: PGlite;
  try {
    pglite = fs.existsSync(path.join(dir, 'PG_VERSION'))
      ? await createPglite(dir)
      : await createCluster(dir, image, progress);
  } catch (error) {
    releaseLock();
    throw error;
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: 'pglite',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: async () => {
      await db.destroy();
      await pglite.close();
      releaseLock();
    },
  };
}

function createPglite(dir: string): Promise<PGlite> {
  return PGlite.create(dir, {
    parsers: { [INT8_OID]: (value: string) => Number(value) },
    startParams: [...PGLITE_DEFAULT_START_PARAMS, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
  });
}

/**
 * A new data dir: unpacked from the image when it fits the installed PGlite, else made by PGlite's
 * initdb, which is also where an image that PGlite refuses to open ends up. Measured for a whole
 * `outdial serve` (docs/benchmarks.md): 0.4-0.8 s against 2.5-4.5 s, peak RSS 264 against 743 MB (medians).
 */
async function createCluster(dir: string, image: string | null, progress: Progress): Promise<PGlite> {
  const started = performance.now();
  const done = (how: string) =>
    progress(
      `Created the embedded database ${how} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      'info',
    );
  const check = image === null ? null : checkImage(image);
  if (check?.usable) {
    progress(
      `Creating the embedded database in ${dir} from the bundled image (PostgreSQL ${check.manifest.postgres}, PGlite ${check.manifest.pglite})`,
      'info',
    );
    try {
      await unpackImage(check.data, dir);
      const pglite = await createPglite(dir);
      done('from the image');
      return pglite;
    } catch (error) {
      progress(
        `Warning: the database image could not be opened (${(error as Error).message}); running initdb instead`,
        'warn',
      );
      clearUnpacked(dir);
    }
  } else if (check) {
    progress(
      `Warning: ${check.reason}; running initdb instead. Rebuild the image with \`npm run build:pgimage\`.`,
      'warn',
    );
  }
  progress(
    `Creating the embedded database in ${dir} with initdb (a few seconds; up to 900 MB of memory)`,
    'info',
  );
  const pglite = await createPglite(dir);
  done('with initdb');
  return pglite;
}

/**
 * PGlite runs inside one process; a second process opening the same files would corrupt them. A
 * lock file holding our pid refuses the second opener with a clear message, and a lock left by a
 * process that no longer exists is taken over.
 */
function lockDataDir(dir: string): () => void {
  const lockPath = path.join(dir, 'outdial.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(fs.readFileSync(lockPath, 'utf8'));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new DataDirLockedError(dir, holder);
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`Could not lock the embedded database in ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
