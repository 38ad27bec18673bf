import type { EndedReason, ToolCallRecord, TurnMetrics } from './domain/agent-call.js';
import type { CallStatus, FinalCallStatus, TranscriptEntry } from './domain/call.js';
import type { Dependency } from './domain/dependencies.js';
import type { FailureSource } from './domain/failure.js';
import type { LiveCallEvent, LiveCommand, LiveReply, LiveRequestResult } from './domain/live-call.js';

/** The live view of one call: what `GET /api/v1/status/call` answers (the spec's Live call status). */
export interface LiveCallStatus {
  callId: string;
  status: CallStatus;
  startTime: string;
  phoneNumber: string;
  contactId: string;
  batchId: string | null;
  error: string | null;
  duration: number | null;
  recordingUrl: string | null;
}

/** A live entry remembers its owner, so reads stay scoped to the user without a database trip. */
export interface LiveCallEntry extends LiveCallStatus {
  userId: string;
}

/** Live cache port: Redis when REDIS_URL is set, bounded memory otherwise; entries expire after 30 days. */
export interface LiveCache {
  putCall(entry: LiveCallEntry): Promise<void>;
  getCall(callId: string): Promise<LiveCallEntry | null>;
  /** Every live call of a batch, in no particular order. */
  getBatchCalls(batchId: string): Promise<LiveCallEntry[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const LIVE_TTL_SECONDS = 30 * 24 * 60 * 60;

/** The agent a call speaks for, as the provider and the conversation engine need it. */
export interface DialAgent {
  id: string;
  name: string;
  agentName: string | null;
  language: string | null;
  /** The SIP trunk the agent's calls go through; null: OUTDIAL_VOICE_PROVIDER decides. */
  sipTrunkId: string | null;
  /** basicDetails as stored: the conversation engine reads its script (greeting, prompts, closing) from it. */
  details: Record<string, unknown>;
}

export interface DialRequest {
  /** Our call id: the provider's idempotency key, so asking twice never places two calls. */
  callId: string;
  to: string;
  /** 1 for the first call to this contact's number by this user or batch, 2 for the next, ... */
  attempt: number;
  agent: DialAgent;
  contact: { id: string; name: string };
  /**
   * The moment the start was admitted by the shared start log: a provider that takes the call at
   * once (the simulator) records it as the call's start, so the recorded starts keep the rate's
   * windows whatever the delays between processes.
   */
  startAt?: Date;
  /**
   * A batch call's pace: the start log key and rate the dispatcher admitted it with. A provider
   * that may hold the call before it goes out (SIP, at a full trunk) admits it again against this
   * key right before the network and records that moment as its start, so calls released
   * together still start at the batch's pace. Absent for single calls.
   */
  pace?: Pace;
  /** The provider recorded on the call, when it was placed already (reconciliation asks that one). */
  provider?: string;
  /**
   * Values for the agent's {{variables}}: the contact's name, company and phone number, every
   * batch contact `metadata` key, and the dial body's `variables` (see domain/agent-call.ts).
   */
  variables?: Record<string, string>;
  /**
   * False when nobody asked for this call's `call.started` or `call.answered` (its batch has no
   * onCallEvent; a single call's statusCallBackEvents name neither): its dial records then write
   * each step in one statement without looking for listeners. Absent: they look (always right).
   */
  progressEvents?: boolean;
}

/** A start log key, its rate, and the window it is counted in (see `RateLimiter.admit`). */
export interface Pace {
  key: string;
  perSecond: number;
  windowMs: number;
}

/** What a provider tells us when a call ends. */
export interface CallEndedEvent {
  callId: string;
  status: FinalCallStatus;
  /** Seconds of connected time; 0 when nobody answered. */
  duration: number;
  answeredAt: Date | null;
  endedAt: Date;
  error: string | null;
  transcription: TranscriptEntry[];
  /** The SIP status code of the carrier's final answer, for calls placed through a SIP trunk. */
  sipCode?: number | null;
  /**
   * Why the call ended: always for an answered call; for one nobody answered, only a failure of
   * ours (`trunk-unreachable`, `trunk-rejected`); otherwise null.
   */
  endedReason?: EndedReason | null;
  /** Whose failure it was, when the transport knows it better than the end reason says (domain/failure.ts). */
  failureSource?: FailureSource | null;
  /** Per agent turn latencies (AI calls). */
  turns?: TurnMetrics[];
  /** Tools the model called, in order. */
  toolCalls?: ToolCallRecord[];
}

export interface ProviderCallState {
  known: boolean;
  ended: CallEndedEvent | null;
}

export interface Recording {
  contentType: string;
  body: Buffer;
}

/** A finished recording as a transport leaves it: a local file the store takes over. */
export interface RecordedFile {
  path: string;
  contentType: string;
}

/**
 * Where call recordings are kept (the recording port): local disk under the data dir by default
 * (src/adapters/recordings/local-disk.ts). The answered-call session puts each call's recording;
 * the provider's `recording()` reads it back.
 */
export interface RecordingStore {
  /**
   * A local path where a transport may write a call's recording while the call runs (the file
   * is handed to `put` when it is finished, or removed).
   */
  scratchPath(callId: string): Promise<string>;
  /** Keeps the finished file as the call's recording; the file is the store's from here on. */
  put(callId: string, file: RecordedFile): Promise<void>;
  /** The call's recording, or null when there is none (never made, or pruned). */
  get(callId: string): Promise<Recording | null>;
  /** Deletes recordings past the store's retention (OUTDIAL_RECORDING_RETENTION_DAYS); how many went. */
  prune(): Promise<number>;
}

/** Voice provider port: the simulator by default; a SIP trunk later. */
/**
 * What every transport does with the calls it holds: report their ends, settle one whose owner is
 * gone, play back its recording, and stop. A transport that never places calls (the web calls,
 * whose browser is on the line from the start) is only this.
 */
export interface CallHolder {
  readonly name: string;
  /** Registers the one consumer of call-ended events. */
  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void;
  /**
   * Reconciliation of a call sent by a process that is gone: its end, from its dial record (the
   * simulator, stateless, rebuilds it from the number, the attempt and the time it went out, and
   * picks up a call still running).
   */
  lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState>;
  /** Audio of a finished call, or null when the provider has none. */
  recording(call: {
    id: string;
    duration: number;
    transcription: TranscriptEntry[];
    /** The provider that placed the call, as recorded on it. */
    provider?: string;
  }): Promise<Recording | null>;
  close(): Promise<void>;
}

/** A transport that places calls (the simulator, SIP), and the router in front of them. */
export interface VoiceProvider extends CallHolder {
  /** The provider that places this agent's calls, as recorded on each call row. */
  nameFor(agent: DialAgent): string;
  /** Places the call. Idempotent on `callId`: a second request for the same id does not dial again. */
  dial(request: DialRequest): Promise<void>;
  /**
   * Whether this agent's answered calls are held by a conversation engine in this process (an AI
   * call, counted against OUTDIAL_MAX_AI_CALLS); absent: never (a canned or handed-off call).
   */
  holdsConversations?(agent: DialAgent): boolean;
}

/**
 * This process's load (`ProcessLoad`, src/voice/load.ts): the AI calls it holds (answered calls
 * in a conversation engine's session) and its event-loop lag, each against its bound
 * (OUTDIAL_MAX_AI_CALLS, OUTDIAL_MAX_EVENT_LOOP_LAG_MS). The session counts the answered calls; the
 * dispatcher and a single dial reserve a place for each call they place and read what is left.
 */
export interface LoadGauge {
  /** OUTDIAL_MAX_AI_CALLS. */
  readonly maxAiCalls: number;
  /** AI calls in progress in this process. */
  readonly aiCalls: number;
  /** Whether the event loop's lag is past its bound (the last measured window). */
  readonly lagging: boolean;
  /** Whether this call is one of the AI calls in progress here. */
  holds(callId: string): boolean;
  /** AI calls this process may still take on: the bound less those in progress and those reserved. */
  readonly aiRoom: number;
  /**
   * A call placed here whose agent the engine holds takes its place from now, while it rings:
   * until its session starts (`startAiCall`) or it is released (it ended unanswered, or was never
   * placed). Idempotent.
   */
  reserve(callId: string): void;
  /** Gives a reserved place back (idempotent; nothing for a call not reserved). */
  release(callId: string): void;
  /**
   * An answered call's session starts: counted until `end` (idempotent). `over`: the process held
   * its most AI calls already, so this one cannot be served.
   */
  startAiCall(callId: string): { over: boolean; end(): void };
}

/** What the transport needs of a WebSocket (a `ws` WebSocket on the server has all of it). */
export interface WebCallSocket {
  readonly readyState: number;
  send(data: Buffer | string): void;
  close(code?: number, reason?: string): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  off(
    event: 'message',
    listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void,
  ): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * The web calls (the dashboard's "Talk to this agent"), as the HTTP layer uses them: a browser's
 * call held on its socket until it ends, and every one hung up when the app closes.
 */
export interface WebCalls {
  talk(request: DialRequest, answeredAt: Date, socket: WebCallSocket): Promise<CallEndedEvent>;
  close(): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Per-key call rate limiter (GCRA, see domain/gcra.ts). `reserve` grants up to `wanted` start
 * slots within the next `horizonMs`, returned as delays from now in ms; `release` gives back the
 * last `count` slots of a reservation that found no work. Redis when REDIS_URL is set (shared by
 * every worker), memory otherwise.
 */
export interface RateLimiter {
  reserve(key: string, ratePerSecond: number, wanted: number, horizonMs: number): Promise<number[]>;
  release(key: string, ratePerSecond: number, count: number): Promise<void>;
  /**
   * The check at the moment a call really starts: records the start and answers `waitMs` 0 and
   * `at`, the moment it was recorded in the limiter's one clock, when fewer than `ratePerSecond`
   * starts of this key fall in the last `windowMs`; otherwise records nothing and answers how
   * many ms to wait. Timers fire late, and a reservation alone cannot see that; this keeps every
   * window under the rate across all processes, and a start recorded at `at` keeps it too. The
   * log holds one entry per `member`: admitting a member again first drops its earlier entry
   * (that start did not happen), so a call checked twice (the dispatcher, then the SIP provider
   * right before its INVITE) counts once, at its last admitted moment.
   */
  admit(key: string, ratePerSecond: number, windowMs: number, member: string): Promise<Admission>;
  close(): Promise<void>;
}

export type Admission = { waitMs: 0; at: Date } | { waitMs: number; at: null };

/**
 * Places shared by every process (Redis): at most `limit` members of a key hold one at a time.
 * A lease runs out after `leaseMs` unless its member acquires again (a renewal), so a process that
 * dies gives its places back.
 */
/** A trunk as a SIP call needs it: where to send INVITEs, as whom, and its caps. */
export interface SipTrunk {
  id: string;
  host: string;
  port: number;
  username: string | null;
  password: string | null;
  fromNumber: string;
  maxCallsPerSecond: number | null;
  maxConcurrentCalls: number | null;
}

/** Where the SIP transport finds the trunk a call goes through (its password opened). */
export interface TrunkDirectory {
  forDialing(trunkId: string): Promise<SipTrunk | null>;
}

/**
 * Asks one dependency (domain/dependencies.ts) a real, small question: a chat model a 1-token
 * streamed completion, a speech server a tiny transcription or synthesis, a realtime server a
 * session, a trunk SIP OPTIONS. Resolves when it answered; rejects with an Error that says what
 * failed. The circuit breakers' half-open probes and the health report use it.
 */
/**
 * Whether the models this process's AI calls need are up, as their circuit breakers say now (no
 * wait): an answered call whose engine's model is known down ends at once, before any greeting.
 */
export interface DependencyGate {
  /** The first engine dependency whose breaker holds calls back, or null when all are closed. */
  unavailable(): { kind: Exclude<Dependency['kind'], 'trunk'>; name: string } | null;
}

export interface DependencyProber {
  probe(dependency: Dependency, options?: { timeoutMs?: number }): Promise<void>;
}

export interface Leases {
  /** Takes, or renews, a place for `member`; false when all `limit` places are held by others. */
  acquire(key: string, limit: number, member: string, leaseMs: number): Promise<boolean>;
  release(key: string, member: string): Promise<void>;
}

/**
 * Where a call id stands on its way to the network: `waiting` (recorded with the call, waiting for
 * its slot or its trunk: nothing reached the network), `sent` (handed to the network: the
 * INVITE went out, or the simulator took it), `ended` (the provider reported its end), or
 * `returned` (it went back to the queue without reaching the network; the id is never used again).
 */
export type DialState = 'waiting' | 'sent' | 'ended' | 'returned';

export interface DialRecord {
  callId: string;
  /** The process that dials (or dialed) it; the call is alive while that owner's lease is. */
  owner: string;
  provider: string;
  state: DialState;
  createdAt: Date;
  /** When the call went out: its recorded start time. */
  sentAt: Date | null;
  answeredAt: Date | null;
  /** The provider's end report, once it ended. */
  ended: CallEndedEvent | null;
  /** The owner's last lease renewal (its heartbeat), null when the owner is gone. */
  ownerSeenAt: Date | null;
}

/**
 * The owner named on the waiting record of a single call that an API process without a SIP stack
 * (`outdial api`) hands to the workers: no process holds a lease under it, so any worker may
 * adopt the record and place the call, at most once.
 */
export const HAND_OFF_OWNER = 'hand-off';

/**
 * Dial records, in the shared database: what decides whether a call was placed. A record is
 * written before its provider reaches the network, so a call id goes out at most once across
 * processes and hosts. Each process holds a lease (renewed every few seconds) under `owner`.
 */
export interface DialRecords {
  /** This process's id, named on every record it writes. */
  readonly owner: string;
  /**
   * Writes the waiting record of a call this process is about to place (nothing when one exists);
   * true when the record is this process's and still waiting, i.e. it may go on.
   */
  hold(callId: string, provider: string): Promise<boolean>;
  /**
   * Right before the network: this process's waiting record (or none yet) becomes sent at `at`,
   * which is recorded as the call's start time. False: not this process's to send (sent already,
   * ended, returned, or taken over), and the call must not go out.
   */
  send(callId: string, provider: string, at: Date, progressEvents?: boolean): Promise<boolean>;
  /** The carrier refused the call for capacity: it is waiting again (nothing was placed). */
  refused(callId: string): Promise<void>;
  /** The call was answered at `at` (the first answer is kept). `progressEvents`: see DialRequest. */
  answered(callId: string, at: Date, progressEvents?: boolean): Promise<void>;
  ended(event: CallEndedEvent): Promise<void>;
  find(callId: string): Promise<DialRecord | null>;
  /** Takes the record of a call whose owner `from` is gone; false when another process did first. */
  adopt(callId: string, from: string): Promise<boolean>;
  /**
   * Gives this process's waiting record of a call to the workers (`HAND_OFF_OWNER`); false when
   * it is not this process's waiting record any more.
   */
  handOff(callId: string): Promise<boolean>;
}

/**
 * The per-call channel of live call control (docs/agents.md, "Live call control"): the process
 * holding an answered call serves its commands and publishes its events; any API process sends
 * commands and follows the events. Redis pub/sub when REDIS_URL is set (hosts may differ), memory
 * in one process otherwise.
 */
export interface LiveCallChannel {
  /**
   * This process holds `callId`: commands for it go to `handler`, whose answer is sent back.
   * Resolves once commands can arrive; the returned function stops serving.
   */
  serve(callId: string, handler: (command: LiveCommand) => Promise<LiveReply>): Promise<() => Promise<void>>;
  /**
   * Sends a command to the host of `callId`: its reply; 'not-live' when no process serves the
   * call; 'timeout' when one does but did not answer within `timeoutMs`.
   */
  request(callId: string, command: LiveCommand, timeoutMs: number): Promise<LiveRequestResult>;
  /** Publishes an event of the call to whoever follows it now (nothing is kept). */
  publish(callId: string, event: LiveCallEvent): Promise<void>;
  /** Follows the call's events; resolves once they are delivered, with the function that stops. */
  subscribe(callId: string, listener: (event: LiveCallEvent) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
