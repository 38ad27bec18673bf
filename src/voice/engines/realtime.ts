/**
 * The realtime conversation engine (OUTDIAL_CONVERSATION_ENGINE=realtime): one speech-to-speech
 * model holds the call over the OpenAI Realtime API (a WebSocket per call, see
 * src/adapters/models/realtime.ts). The callee's audio streams to it (8 kHz resampled to 24 kHz
 * PCM16), its server-side voice activity ends their turns and starts its replies, and its audio
 * is played as it streams in. Function calls go to the same built-in and HTTP tools as the LLM
 * engine; a callee who speaks over the agent stops it (response.cancel, and the reply truncated
 * to what was heard). An `error` event, a dropped socket or a model that stops answering ends
 * the call with `error` after the apology. See docs/agents.md.
 */
import type { Logger } from 'pino';
import type { EndedReason, TurnMetrics } from '../../domain/agent-call.js';
import type { TranscriptEntry } from '../../domain/call.js';
import { heardWords, saysGoodbye } from '../../domain/dialogue.js';
import { Resampler } from '../audio/resample.js';
import type {
  ChatToolCall,
  ConversationEngine,
  ConversationSession,
  PlayResult,
  RealtimeConnect,
  RealtimeEndpoint,
  RealtimeEvent,
  RealtimeLink,
  TextToSpeech,
} from '../contracts.js';
import type { HttpToolCaller } from '../http-tools.js';
import { speakApology } from './apology.js';
import { CallTools, sessionPrompt } from './call-tools.js';
import type { BargeInEvent } from './llm.js';
import { chatTools } from './llm-tools.js';

export interface RealtimeEngineOptions extends RealtimeEndpoint {
  /** Opens a call's connection to the server (main.ts gives RealtimeConnection.open). */
  connect: RealtimeConnect;
  logger?: Logger;
  /** Calls the agents' HTTP tools; without it, an HTTP tool the model calls fails (the model is told). */
  httpTools?: HttpToolCaller | null;
  /** Speaks the apology when the model fails, after the call's own text-to-speech (main.ts gives espeak-ng). */
  fallbackTts?: TextToSpeech;
  /** Longest wait on the server: the connection, and the next event while a reply is awaited (default 10 s). */
  modelTimeoutMs?: number;
  /** Silence that ends the callee's turn, for the server's voice activity (default 500 ms). */
  endSilenceMs?: number;
  /** The server's model that transcribes the callee for the transcript (default 'whisper-1'). */
  transcriptionModel?: string;
  /** Called at each barge-in with the time from the callee's speech start to the agent's audio stopped. */
  onBargeIn?: (event: BargeInEvent) => void;
}

/** The Realtime API's PCM16 rate; the call's audio is 8 kHz. */
const MODEL_RATE = 24_000;
const CALL_RATE = 8000;
const DEFAULT_MODEL_TIMEOUT_MS = 10_000;
const DEFAULT_END_SILENCE_MS = 500;
const DEFAULT_TRANSCRIPTION_MODEL = 'whisper-1';
/** How often silence and a stalled server are looked for. */
const WATCH_MS = 250;
/**
 * Errors the server reports for a step that was already moot: a cancel after the reply ended
 * (OpenAI's server VAD may cancel it first). They do not end the call.
 */
const HARMLESS_ERRORS = new Set(['response_cancel_not_active']);
/** event_id prefix of the cancels and truncations sent at a barge-in (their errors are moot). */
const CUT_EVENT = 'outdial_cut_';

/** Creates the engine; the session loader names it 'realtime'. */
export function createRealtimeEngine(options: RealtimeEngineOptions): ConversationEngine {
  const engine: ConversationEngine = {
    name: 'realtime',
    converse: (session) => new RealtimeConversation(session, options).run(),
  };
  return engine;
}

/** One message item of a reply: its audio on the way out and its words. */
interface ReplyItem {
  id: string;
  resampler: Resampler;
  plays: Array<Promise<PlayResult>>;
  /** Ms of its audio received from the server. */
  receivedMs: number;
  transcript: string;
}

/** A reply of the model (a `response`): its audio items and its function calls. */
interface Reply {
  id: string;
  items: Map<string, ReplyItem>;
  calls: ChatToolCall[];
  done: boolean;
  interrupted: boolean;
  metrics: TurnMetrics | null;
  /** When the callee's turn was decided (speech_stopped arrived); the model's latency counts from it. */
  turnEndedAt: number | null;
  speechEndedAt: number | null;
  /** Settled when a say() asked for this reply. */
  onFinished: (() => void) | null;
  /** Set at a barge-in: callee speech start to the agent's audio stopped, in ms. */
  stopMs: number | null;
}

/** A transcript line in the order the turns happened; a line waits for its words. */
interface Line {
  key: string;
  role: TranscriptEntry['role'];
  text: string | null;
  timer: NodeJS.Timeout | null;
}

class RealtimeConversation {
  private readonly log: Logger | undefined;
  private readonly modelTimeoutMs: number;
  private readonly callTools: CallTools;
  private connection: RealtimeLink | null = null;
  private readonly replies = new Map<string, Reply>();
  /** Replies asked for by say() and not yet created, by the tag in their metadata. */
  private readonly asked = new Map<string, () => void>();
  private asks = 0;
  private cuts = 0;
  private readonly lines: Line[] = [];
  /** The callee's audio on the wire: input ms (as the server counts it) to wall-clock ms. */
  private readonly timeline: Array<{ ms: number; at: number }> = [];
  private inputMs = 0;
  private readonly upsampler = new Resampler(CALL_RATE, MODEL_RATE);
  private calleeSpeaking = false;
  private speechStartedAt: number | null = null;
  /** The callee's last turn, until the reply it starts is created. */
  private pendingTurn: { speechEndedAt: number; endedAt: number } | null = null;
  /** A reply is awaited from the server (asked for, or its voice activity ended a turn). */
  private awaiting = false;
  private lastServerEventAt = Date.now();
  private lastActivity = Date.now();
  private calleeActivity = 0;
  private reprompted = false;
  private finished = false;
  private failing = false;
  private readonly cleanups: Array<() => void> = [];

  constructor(
    private readonly session: ConversationSession,
    private readonly options: RealtimeEngineOptions,
  ) {
    this.log = options.logger?.child({ callId: session.callId }) ?? session.logger;
    this.modelTimeoutMs = options.modelTimeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
    this.callTools = new CallTools({
      session,
      httpTools: options.httpTools,
      logger: this.log,
      end: (reason) => this.end(reason),
      speak: (text) => this.say(`Say exactly this, word for word, and nothing else: "${text}"`),
    });
  }

  async run(): Promise<void> {
    const { session } = this;
    // The call's end (a hang-up on either side): the lines whose words are known go in now,
    // before the session reads the transcript.
    const onEnd = () => this.finish();
    session.signal.addEventListener('abort', onEnd, { once: true });
    this.cleanups.push(() => session.signal.removeEventListener('abort', onEnd));
    if (session.media !== 'audio') {
      throw new Error(
        'the realtime engine holds audio calls only (a speech-to-speech model needs the audio)',
      );
    }
    try {
      this.connection = await this.options.connect(this.options, {
        timeoutMs: this.modelTimeoutMs,
        signal: session.signal,
        onEvent: (event) => this.onEvent(event),
        onEnd: (error) => void this.fail(error),
      });
    } catch (error) {
      if (!session.signal.aborted) await this.fail(error);
      return;
    }
    if (session.signal.aborted) {
      this.finish();
      return;
    }
    this.configure();
    this.cleanups.push(session.onAudio((frame, receivedAt) => this.sendAudio(frame, receivedAt)));
    const watch = setInterval(() => this.watch(), WATCH_MS);
    this.cleanups.push(() => clearInterval(watch));
    const first = session.config.firstMessage;
    void this.say(
      first
        ? `Open the call by saying exactly this, word for word, and nothing else: "${first}"`
        : 'Open the call: greet the person you called and say why you are calling.',
    );
    await new Promise<void>((resolve) => {
      if (session.signal.aborted) resolve();
      else session.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  // -------------------------------------------------------------------------------------------
  // Sending

  private send(event: { type: string; [field: string]: unknown }): void {
    this.connection?.send(event);
  }

  private instructions(): string {
    return sessionPrompt(this.session);
  }

  private configure(): void {
    const { session } = this;
    const voice = session.agent.details.voiceId;
    const language = session.agent.language?.split('-')[0]?.toLowerCase();
    this.send({
      type: 'session.update',
      session: {
        modalities: ['audio', 'text'],
        instructions: this.instructions(),
        ...(typeof voice === 'string' && voice.trim() !== '' ? { voice } : {}),
        input_audio_format: 'pcm16',
        output_audio_format: 'pcm16',
        input_audio_transcription: {
          model: this.options.transcriptionModel ?? DEFAULT_TRANSCRIPTION_MODEL,
          ...(language ? { language } : {}),
        },
        turn_detection: {
          type: 'server_vad',
          silence_duration_ms: this.options.endSilenceMs ?? DEFAULT_END_SILENCE_MS,
          create_response: true,
          interrupt_response: true,
        },
        tools: chatTools(session.config).map((tool) => ({ type: 'function', ...tool.function })),
        tool_choice: 'auto',
      },
    });
  }

  /** Asks the model for a reply with `extra` added to the instructions; resolves once it played out. */
  private say(extra: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.finished) {
        resolve();
        return;
      }
      const tag = `say_${++this.asks}`;
      this.asked.set(tag, resolve);
      this.awaiting = true;
      this.lastServerEventAt = Date.now();
      this.send({
        type: 'response.create',
        response: { instructions: `${this.instructions()}\n\n${extra}`, metadata: { outdial: tag } },
      });
    });
  }

  private sendAudio(frame: Int16Array, receivedAt: number): void {
    if (this.finished) return;
    this.timeline.push({ ms: this.inputMs, at: receivedAt });
    this.inputMs += (frame.length * 1000) / CALL_RATE;
    const pcm = this.upsampler.push(frame);
    if (pcm.length === 0) return;
    this.send({
      type: 'input_audio_buffer.append',
      audio: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'),
    });
  }

  /** The wall-clock ms the callee's audio at input `ms` arrived (the server counts ms of audio sent). */
  private wallClock(ms: unknown): number {
    if (typeof ms !== 'number' || this.timeline.length === 0) return Date.now();
    let low = 0;
    let high = this.timeline.length - 1;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if ((this.timeline[middle]?.ms ?? 0) <= ms) low = middle;
      else high = middle - 1;
    }
    const entry = this.timeline[low];
    return entry ? entry.at + Math.max(0, ms - entry.ms) : Date.now();
  }

  // -------------------------------------------------------------------------------------------
  // Server events

  private onEvent(event: RealtimeEvent): void {
    if (this.finished) return;
    this.lastServerEventAt = Date.now();
    try {
      this.handle(event);
    } catch (error) {
      void this.fail(error);
    }
  }

  private handle(event: RealtimeEvent): void {
    switch (event.type) {
      case 'error': {
        const error = record(event.error);
        const code = text(error.code);
        // A cancel or truncation racing the server's own end of the reply is moot, not a failure.
        if (HARMLESS_ERRORS.has(code) || text(error.event_id).startsWith(CUT_EVENT)) {
          this.log?.debug({ code }, 'the realtime server ignored a moot request');
          return;
        }
        void this.fail(
          new Error(`the realtime model reported an error: ${text(error.message) || code || 'unknown'}`),
        );
        return;
      }
      case 'input_audio_buffer.speech_started':
        this.speechStarted(event);
        return;
      case 'input_audio_buffer.speech_stopped':
        this.speechStopped(event);
        return;
      case 'conversation.item.input_audio_transcription.completed':
        this.fill(text(event.item_id), 'user', text(event.transcript));
        return;
      case 'conversation.item.input_audio_transcription.failed':
        this.fill(text(event.item_id), 'user', '');
        return;
      case 'response.created':
        this.replyCreated(record(event.response));
        return;
      case 'response.output_item.added': {
        const item = record(event.item);
        const reply = this.reply(event.response_id);
        if (reply && item.type === 'message') this.item(reply, text(item.id));
        return;
      }
      case 'response.audio.delta':
      case 'response.output_audio.delta':
        this.audio(event);
        return;
      case 'response.audio.done':
      case 'response.output_audio.done': {
        const reply = this.reply(event.response_id);
        const item = reply?.items.get(text(event.item_id));
        if (reply && item && !reply.interrupted) this.play(reply, item, item.resampler.flush());
        return;
      }
      case 'response.audio_transcript.done':
      case 'response.output_audio_transcript.done': {
        const reply = this.reply(event.response_id);
        if (reply) this.item(reply, text(event.item_id)).transcript = text(event.transcript);
        return;
      }
      case 'response.function_call_arguments.done': {
        const reply = this.reply(event.response_id);
        reply?.calls.push({
          id: text(event.call_id),
          type: 'function',
          function: { name: text(event.name), arguments: text(event.arguments) },
        });
        return;
      }
      case 'response.done': {
        const response = record(event.response);
        const reply = this.reply(response.id);
        if (!reply) return;
        reply.done = true;
        if (response.status === 'failed') {
          const details = record(record(response.status_details).error);
          void this.fail(
            new Error(`the realtime model's reply failed: ${text(details.message) || 'no reason given'}`),
          );
          return;
        }
        void this.replyDone(reply);
        return;
      }
      default:
        // session.created/updated, conversation.item.*, rate_limits.updated, deltas of text: nothing to do.
        return;
    }
  }

  private reply(id: unknown): Reply | undefined {
    return typeof id === 'string' ? this.replies.get(id) : undefined;
  }

  private item(reply: Reply, id: string): ReplyItem {
    let item = reply.items.get(id);
    if (!item) {
      item = {
        id,
        resampler: new Resampler(MODEL_RATE, CALL_RATE),
        plays: [],
        receivedMs: 0,
        transcript: '',
      };
      reply.items.set(id, item);
      this.reserve(id, 'assistant');
    }
    return item;
  }

  private speechStarted(event: RealtimeEvent): void {
    this.calleeSpeaking = true;
    this.heardCallee();
    this.speechStartedAt = this.wallClock(event.audio_start_ms);
    this.reserve(text(event.item_id), 'user');
    for (const reply of this.replies.values()) {
      if (!reply.interrupted && (!reply.done || this.playing(reply))) this.bargeIn(reply);
    }
  }

  private speechStopped(event: RealtimeEvent): void {
    this.calleeSpeaking = false;
    this.heardCallee();
    this.pendingTurn = { speechEndedAt: this.wallClock(event.audio_end_ms), endedAt: Date.now() };
    // The server's voice activity creates the reply itself (create_response).
    this.awaiting = true;
  }

  private replyCreated(response: Record<string, unknown>): void {
    const id = text(response.id);
    this.awaiting = false;
    const turn = this.pendingTurn;
    this.pendingTurn = null;
    // A say()'s reply by its tag; a server that does not echo metadata: the oldest ask, unless
    // the reply follows a callee turn (the server's voice activity made it).
    let tag = text(record(response.metadata).outdial);
    if (!this.asked.has(tag) && !turn) tag = this.asked.keys().next().value ?? '';
    const onFinished = this.asked.get(tag) ?? null;
    this.asked.delete(tag);
    this.replies.set(id, {
      id,
      items: new Map(),
      calls: [],
      done: false,
      interrupted: false,
      metrics: turn
        ? {
            endpointingMs: Math.max(0, turn.endedAt - turn.speechEndedAt),
            sttMs: null,
            llmFirstTokenMs: null,
            ttsFirstByteMs: null,
            voiceToVoiceMs: null,
          }
        : null,
      turnEndedAt: turn?.endedAt ?? null,
      speechEndedAt: turn?.speechEndedAt ?? null,
      onFinished,
      stopMs: null,
    });
    this.touch();
  }

  private audio(event: RealtimeEvent): void {
    const reply = this.reply(event.response_id);
    // A reply the callee interrupted: what still streams in was cancelled.
    if (!reply || reply.interrupted) return;
    const item = this.item(reply, text(event.item_id));
    const bytes = Buffer.from(text(event.delta), 'base64');
    const samples = new Int16Array(bytes.length >> 1);
    for (let index = 0; index < samples.length; index++) samples[index] = bytes.readInt16LE(index * 2);
    item.receivedMs += (samples.length * 1000) / MODEL_RATE;
    if (reply.metrics && reply.metrics.llmFirstTokenMs === null && reply.turnEndedAt !== null) {
      // The model's answer time: the turn's end to its first audio (no separate STT or TTS here).
      reply.metrics.llmFirstTokenMs = Date.now() - reply.turnEndedAt;
    }
    this.play(reply, item, item.resampler.push(samples));
  }

  private play(reply: Reply, item: ReplyItem, pcm: Int16Array): void {
    if (pcm.length === 0) return;
    item.plays.push(
      this.session.play(pcm, (sentAt) => {
        if (reply.metrics && reply.metrics.voiceToVoiceMs === null && reply.speechEndedAt !== null) {
          reply.metrics.voiceToVoiceMs = Math.max(0, sentAt - reply.speechEndedAt);
        }
      }),
    );
  }

  /** Audio of the reply is still going out (a play has not settled). */
  private playing(reply: Reply): boolean {
    for (const item of reply.items.values()) if (item.plays.length > 0) return true;
    return false;
  }

  /**
   * The callee speaks over the reply: its audio stops, the server stops generating it, and each of
   * its items is cut to the audio that went out, so the model remembers only what was heard.
   */
  private bargeIn(reply: Reply): void {
    reply.interrupted = true;
    this.session.stopPlayback();
    reply.stopMs = Math.max(0, Date.now() - (this.speechStartedAt ?? Date.now()));
    if (!reply.done) {
      this.send({ type: 'response.cancel', response_id: reply.id, event_id: `${CUT_EVENT}${++this.cuts}` });
    }
    for (const item of reply.items.values()) {
      const plays = [...item.plays];
      if (plays.length === 0) continue;
      void Promise.all(plays).then((played) => {
        this.send({
          type: 'conversation.item.truncate',
          item_id: item.id,
          content_index: 0,
          audio_end_ms: Math.round(played.reduce((sum, result) => sum + result.playedMs, 0)),
          event_id: `${CUT_EVENT}${++this.cuts}`,
        });
      });
    }
  }

  /** The reply is complete on the server: once it played out, its lines and its tool calls. */
  private async replyDone(reply: Reply): Promise<void> {
    const items = [...reply.items.values()];
    const heard = await Promise.all(
      items.map(async (item) => {
        const played = await Promise.all(item.plays);
        item.plays = [];
        const playedMs = played.reduce((sum, result) => sum + result.playedMs, 0);
        // A cut item: the share of its words that went out (the transcript is of all the audio made).
        const words = reply.interrupted
          ? heardWords(item.transcript, playedMs, item.receivedMs)
          : item.transcript;
        this.fill(item.id, 'assistant', words);
        return words;
      }),
    );
    if (reply.stopMs !== null) {
      const words = heard.filter(Boolean).join(' ');
      this.log?.info({ bargeInStopMs: reply.stopMs, heard: words }, 'barge-in: the agent stopped talking');
      this.options.onBargeIn?.({ callId: this.session.callId, stopMs: reply.stopMs, heard: words });
    }
    if (reply.metrics) this.session.addTurnMetrics(reply.metrics);
    this.touch();
    reply.onFinished?.();
    this.replies.delete(reply.id);
    if (this.finished) return;
    if (reply.interrupted) {
      // Every function call gets its output, even those the barge-in left unrun; the callee's
      // turn brings the next reply.
      for (const call of reply.calls) {
        this.output(call, JSON.stringify({ ok: false, error: 'not run: the callee interrupted' }));
      }
      return;
    }
    if (reply.calls.length === 0) {
      // A goodbye in the model's own reply ends the call; a line it was asked to say (the
      // voicemail message, the greeting) is followed by what asked for it.
      if (!reply.onFinished && saysGoodbye(heard.join(' '))) {
        this.log?.info('the agent said goodbye: hanging up');
        this.end('agent-ended');
      }
      return;
    }
    const signal = this.session.signal;
    for (const call of reply.calls) {
      const outcome = await this.callTools.run(call, signal);
      if (outcome.ends || this.finished) return;
      this.output(call, outcome.content);
    }
    this.awaiting = true;
    this.lastServerEventAt = Date.now();
    this.send({ type: 'response.create' });
  }

  private output(call: ChatToolCall, content: string): void {
    this.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: call.id, output: content },
    });
  }

  // -------------------------------------------------------------------------------------------
  // The transcript, in the order of the turns

  /** A line's place, taken when its turn starts (the words come later, out of order). */
  private reserve(key: string, role: TranscriptEntry['role']): void {
    if (key === '' || this.lines.some((line) => line.key === key)) return;
    const line: Line = { key, role, text: null, timer: null };
    // A transcription that never comes does not hold the lines after it for long.
    line.timer = setTimeout(() => this.fill(key, role, ''), this.modelTimeoutMs);
    this.lines.push(line);
  }

  private fill(key: string, role: TranscriptEntry['role'], words: string): void {
    let line = this.lines.find((entry) => entry.key === key);
    if (!line) {
      line = { key, role, text: null, timer: null };
      this.lines.push(line);
    }
    if (line.text !== null) return;
    if (line.timer) clearTimeout(line.timer);
    line.text = words;
    this.flush(false);
  }

  /** Adds the lines whose words are known, in order; at the end, every known line. */
  private flush(all: boolean): void {
    while (this.lines.length > 0) {
      const line = this.lines[0];
      if (!line) break;
      if (line.text === null && !all) break;
      this.lines.shift();
      if (line.timer) clearTimeout(line.timer);
      if (line.text) this.session.addTurn(line.role, line.text);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Silence, stalls, ending, failing

  private touch(): void {
    this.lastActivity = Date.now();
  }

  private heardCallee(): void {
    this.calleeActivity++;
    this.touch();
  }

  private watch(): void {
    if (this.finished) return;
    const now = Date.now();
    const busy = [...this.replies.values()].some((reply) => !reply.done || this.playing(reply));
    if (
      (this.awaiting || [...this.replies.values()].some((reply) => !reply.done)) &&
      now - this.lastServerEventAt > this.modelTimeoutMs
    ) {
      void this.fail(new Error(`the realtime model sent nothing for ${this.modelTimeoutMs} ms`));
      return;
    }
    if (busy || this.awaiting || this.calleeSpeaking) return;
    const { repromptMs, hangupMs } = this.session.config.silence;
    const silentMs = now - this.lastActivity;
    if (hangupMs > 0 && silentMs >= hangupMs) {
      this.log?.info({ silentMs }, 'the callee stayed silent: hanging up');
      this.end('silence-timeout');
      return;
    }
    const canReprompt = repromptMs > 0 && !this.reprompted && (hangupMs <= 0 || repromptMs < hangupMs);
    if (canReprompt && silentMs >= repromptMs) {
      this.reprompted = true;
      const since = this.lastActivity;
      const activity = this.calleeActivity;
      void this.say(
        `The callee has said nothing for ${Math.round(silentMs / 1000)} seconds: check, briefly, that they are still there.`,
      ).then(() => {
        // The reprompt does not restart the silence: hangupMs counts from the last words before it.
        if (this.calleeActivity === activity) this.lastActivity = since;
      });
    }
  }

  /** The engine is done: lines in, listeners off, the socket closed. */
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.flush(true);
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.connection?.close();
    for (const reply of this.replies.values()) reply.onFinished?.();
    for (const resolve of this.asked.values()) resolve();
    this.asked.clear();
  }

  private end(reason: EndedReason): void {
    this.finish();
    this.session.hangup(reason);
  }

  /** The model failed: the apology (the call's voice, then espeak-ng), then `model-unavailable`. */
  private async fail(error: unknown): Promise<void> {
    if (this.failing || this.session.signal.aborted) return;
    this.failing = true;
    this.log?.warn({ err: error }, 'the realtime model failed: apologising and hanging up');
    this.session.stopPlayback();
    this.finish();
    try {
      const fallback = this.options.fallbackTts;
      const voices = fallback ? [this.session.models.tts, fallback] : [this.session.models.tts];
      await speakApology(this.session, voices, this.modelTimeoutMs, this.log);
    } finally {
      this.session.hangup('model-unavailable', error instanceof Error ? error.message : String(error));
    }
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
