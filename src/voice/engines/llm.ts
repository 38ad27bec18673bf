/**
 * The LLM conversation engine (OUTDIAL_CONVERSATION_ENGINE=llm, the default when OUTDIAL_LLM_URL
 * is set). On an audio call: voice activity ends the callee's turn, speech-to-text makes it words,
 * the chat model answers with `stream: true` and tools, and each sentence of the answer is spoken
 * as soon as it is complete. On a text call (the simulator) the same dialogue without speech.
 * It stops speaking when Listening reports a barge-in (`onInterruption`, by the agent's
 * `interruption` rules), and handles the built-in and HTTP tools, silence, goodbyes and failures,
 * and records each turn's latency. See docs/agents.md.
 */
import type { Logger } from 'pino';
import type { EndedReason, TurnMetrics } from '../../domain/agent-call.js';
import { saysGoodbye } from '../../domain/dialogue.js';
import type {
  ChatMessage,
  ChatModel,
  ChatTool,
  ChatToolCall,
  ConversationEngine,
  ConversationSession,
  TextToSpeech,
} from '../contracts.js';
import type { HttpToolCaller } from '../http-tools.js';
import { type AgentSpeech, type HeardTurn, type Interruption, Listening } from '../listening.js';
import { SentenceSplitter } from '../sentences.js';
import { APOLOGY, speakApology } from './apology.js';
import { CallTools, sessionPrompt } from './call-tools.js';
import { AudioReply, bounded, guardedStream, type Heard, type ReplyOutput, TextReply } from './llm-output.js';
import { chatTools, isBuiltIn } from './llm-tools.js';

export interface LlmEngineOptions {
  logger?: Logger;
  /** Calls the agents' HTTP tools; without it, an HTTP tool the model calls fails (the model is told). */
  httpTools?: HttpToolCaller | null;
  /**
   * Speaks the apology when the call's own text-to-speech failed (main.ts gives espeak-ng); without
   * it, the call's own voice is tried.
   */
  fallbackTts?: TextToSpeech;
  /** Silence that ends the callee's turn (default 500 ms). */
  endSilenceMs?: number;
  /** A callee turn is cut at this length (default 6000 ms). */
  maxTurnMs?: number;
  /** Rounds of tool calls in one turn before the model must answer in words (default 5). */
  maxToolRounds?: number;
  /** Longest wait on a model: the chat's next token, a transcription, the next audio chunk (default 10 s). */
  modelTimeoutMs?: number;
  /** Called at each barge-in with the time from the callee's speech start to the agent's audio stopped. */
  onBargeIn?: (event: BargeInEvent) => void;
}

export interface BargeInEvent {
  callId: string;
  /** Callee speech start on the wire to the agent's playback stopped, in ms. */
  stopMs: number;
  /** The agent's words the callee heard before the stop. */
  heard: string;
}

/** Creates the engine; the session loader names it 'llm'. */
export function createLlmEngine(options: LlmEngineOptions = {}): ConversationEngine {
  return {
    name: 'llm',
    converse: (session) => new LlmConversation(session, options).run(),
  };
}

const DEFAULT_END_SILENCE_MS = 500;
/** An operator's line among the turn loop's inputs. */
class OperatorLine {
  constructor(readonly text: string) {}
}
const DEFAULT_MAX_TURN_MS = 6000;
const DEFAULT_TOOL_ROUNDS = 5;
const DEFAULT_MODEL_TIMEOUT_MS = 10_000;
/** Received audio kept for barge-in checks. */
const KEPT_AUDIO_MS = 10_000;

/** A stage that failed: the call gets the apology and ends naming it (`STAGE_REASONS`). */
const STAGE_REASONS = {
  llm: 'model-unavailable',
  stt: 'stt-unavailable',
  tts: 'tts-unavailable',
} as const satisfies Record<ModelStageError['stage'], EndedReason>;

class ModelStageError extends Error {
  override name = 'ModelStageError';
  constructor(
    readonly stage: 'llm' | 'stt' | 'tts',
    cause: unknown,
  ) {
    super(`${stage}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** What the callee said: a finished turn of speech (audio) or a line (text). */
interface CalleeInput {
  /** The words, once known ('' for noise, or a backchannel said over the agent). */
  words: Promise<string>;
  speechEndedAt: number | null;
  endpointingMs: number | null;
  /** Set when the transcription finished. */
  sttMs: number | null;
}

/** The agent's turn in progress: from the model request to the last audio played. */
interface ActiveTurn {
  controller: AbortController;
  output: ReplyOutput | null;
  interrupted: boolean;
  /** What Listening knows of it (audio calls): the callee may interrupt it. */
  speech: AgentSpeech | null;
}

type Outcome = 'continue' | 'ended';

class LlmConversation {
  private readonly log: Logger | undefined;
  private readonly history: ChatMessage[] = [];
  private readonly tools: ChatTool[];
  private readonly inbox: CalleeInput[] = [];
  /** Lines an operator asked the agent to say (POST /api/v1/call/say), said at the next turn boundary. */
  private readonly operatorLines: string[] = [];
  private wake: (() => void) | null = null;
  private active: ActiveTurn | null = null;
  private calleeSpeaking = false;
  /** Last time either side spoke: silence is counted from it. */
  private lastActivity = Date.now();
  private reprompted = false;
  /** Counts the callee's activity, so a reprompt can tell whether it was answered. */
  private calleeActivity = 0;
  private finished = false;
  private listening: Listening | null = null;
  private readonly cleanups: Array<() => void> = [];
  private readonly modelTimeoutMs: number;
  private readonly maxToolRounds: number;
  private failing = false;
  private readonly callTools: CallTools;

  constructor(
    private readonly session: ConversationSession,
    private readonly options: LlmEngineOptions,
  ) {
    this.log = options.logger?.child({ callId: session.callId }) ?? session.logger;
    this.modelTimeoutMs = options.modelTimeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
    this.maxToolRounds = options.maxToolRounds ?? DEFAULT_TOOL_ROUNDS;
    this.tools = chatTools(session.config);
    this.callTools = new CallTools({
      session,
      httpTools: options.httpTools,
      logger: this.log,
      end: (reason) => this.end(reason),
      speak: (text) => this.speakLine(text),
    });
    this.history.push({ role: 'system', content: sessionPrompt(session) });
  }

  async run(): Promise<void> {
    const { session } = this;
    const onEnd = () => this.nudge();
    session.signal.addEventListener('abort', onEnd, { once: true });
    this.cleanups.push(() => session.signal.removeEventListener('abort', onEnd));
    this.cleanups.push(
      session.onOperatorSay((text) => {
        this.operatorLines.push(text);
        this.nudge();
      }),
    );
    try {
      const chat = session.models.chat;
      if (!chat) throw new ModelStageError('llm', new Error('no chat model is configured (OUTDIAL_LLM_URL)'));
      await this.listen();
      const first = session.config.firstMessage
        ? await this.speakLine(session.config.firstMessage)
        : await this.respond(chat, null);
      if (first === 'ended') return;
      for (;;) {
        const next = await this.next();
        if (next === null) return;
        if (next instanceof OperatorLine) {
          // Said as the agent's own words: in the transcript and the model's history alike.
          if ((await this.speakLine(next.text)) === 'ended') return;
          continue;
        }
        if (next === 'hangup') {
          this.log?.info(
            { silentMs: Date.now() - this.lastActivity },
            'the callee stayed silent: hanging up',
          );
          this.end('silence-timeout');
          return;
        }
        if (next === 'reprompt') {
          this.reprompted = true;
          const since = this.lastActivity;
          const activity = this.calleeActivity;
          const seconds = Math.round((Date.now() - since) / 1000);
          this.addUser(`(The callee has said nothing for ${seconds} seconds.)`);
          if ((await this.respond(chat, null)) === 'ended') return;
          // The reprompt does not restart the silence: hangupMs counts from the last words before it.
          if (this.calleeActivity === activity) this.lastActivity = since;
          continue;
        }
        const words = (
          await bounded(next.words, this.modelTimeoutMs * 2, session.signal, 'speech-to-text')
        ).trim();
        // Noise, or a "yeah" said over the agent: no turn.
        if (words === '') continue;
        this.reprompted = false;
        session.addTurn('user', words);
        this.addUser(words);
        if ((await this.respond(chat, next)) === 'ended') return;
      }
    } catch (error) {
      if (session.signal.aborted) return;
      await this.fail(error);
    } finally {
      this.finished = true;
      this.active?.controller.abort();
      for (const cleanup of this.cleanups) cleanup();
      await this.listening?.close();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Listening

  private async listen(): Promise<void> {
    const { session } = this;
    if (session.media === 'text') {
      this.cleanups.push(
        session.onText((line) => {
          const text = line.trim();
          if (text === '') return;
          this.heardCallee();
          this.push({
            words: Promise.resolve(text),
            speechEndedAt: null,
            endpointingMs: null,
            sttMs: null,
          });
        }),
      );
      return;
    }
    this.listening = await Listening.start(session, {
      endSilenceMs: this.options.endSilenceMs ?? DEFAULT_END_SILENCE_MS,
      maxTurnMs: this.options.maxTurnMs ?? DEFAULT_MAX_TURN_MS,
      keepAudioMs: KEPT_AUDIO_MS,
      interruption: session.config.interruption,
      logger: this.log,
      onSpeechStart: () => this.speechStarted(),
      onTurn: (turn) => this.speechEnded(turn),
      onInterruption: (event) => this.interrupted(event),
      // A detector that breaks mid-call would leave the agent deaf: the call ends instead.
      onError: (error) => {
        if (!this.finished) void this.fail(error);
      },
    });
  }

  private speechStarted(): void {
    if (this.finished) return;
    this.calleeSpeaking = true;
    this.heardCallee();
  }

  /** The callee interrupted the agent's speech (a barge-in): the agent stops. */
  private interrupted({ speech, startedAt }: Interruption): void {
    const active = this.active;
    if (this.finished || !active || active.speech !== speech) return;
    active.interrupted = true;
    active.output?.stop();
    const stopMs = Date.now() - startedAt;
    active.controller.abort(new Error('barge-in'));
    // What was heard is known once the transport reports what it played.
    void active.output
      ?.finish()
      .catch(() => ({ text: '', interrupted: true }) satisfies Heard)
      .then((heard) => {
        this.log?.info({ bargeInStopMs: stopMs, heard: heard.text }, 'barge-in: the agent stopped talking');
        this.options.onBargeIn?.({ callId: this.session.callId, stopMs, heard: heard.text });
      });
    if (!active.output) {
      this.log?.info({ bargeInStopMs: stopMs, heard: '' }, 'barge-in: the agent stopped talking');
      this.options.onBargeIn?.({ callId: this.session.callId, stopMs, heard: '' });
    }
  }

  private speechEnded(turn: HeardTurn): void {
    if (this.finished) return;
    this.calleeSpeaking = false;
    this.heardCallee();
    const input: CalleeInput = {
      words: turn.words.then(
        (text) => {
          input.sttMs = turn.sttMs;
          return text;
        },
        (error: unknown) => {
          throw new ModelStageError('stt', error);
        },
      ),
      speechEndedAt: turn.speechEndedAt,
      endpointingMs: turn.endpointingMs,
      sttMs: null,
    };
    // Awaited by the turn loop when it gets there; marked handled now so a failure waits for it.
    input.words.catch(() => undefined);
    this.push(input);
  }

  private push(input: CalleeInput): void {
    this.inbox.push(input);
    this.nudge();
  }

  private nudge(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private touch(): void {
    this.lastActivity = Date.now();
  }

  /** The callee did something (speech started or ended, a line): counts for silence, unlike a reprompt. */
  private heardCallee(): void {
    this.calleeActivity++;
    this.touch();
  }

  /**
   * The next callee input, an operator's line (only while the callee is not speaking, and after
   * what they said), or what the silence calls for; null when the call is over.
   */
  private async next(): Promise<CalleeInput | OperatorLine | 'reprompt' | 'hangup' | null> {
    const { repromptMs, hangupMs } = this.session.config.silence;
    for (;;) {
      if (this.session.signal.aborted) return null;
      const input = this.inbox.shift();
      if (input) return input;
      const line = this.calleeSpeaking ? undefined : this.operatorLines.shift();
      if (line !== undefined) return new OperatorLine(line);
      let waitMs = Number.POSITIVE_INFINITY;
      if (!this.calleeSpeaking) {
        const silentMs = Date.now() - this.lastActivity;
        if (hangupMs > 0 && silentMs >= hangupMs) return 'hangup';
        const canReprompt = repromptMs > 0 && !this.reprompted && (hangupMs <= 0 || repromptMs < hangupMs);
        if (canReprompt && silentMs >= repromptMs) return 'reprompt';
        if (hangupMs > 0) waitMs = hangupMs - silentMs;
        if (canReprompt) waitMs = Math.min(waitMs, repromptMs - silentMs);
      }
      await new Promise<void>((resolve) => {
        // While the callee speaks, the end of their speech (or a stuck detector's next look) decides.
        const timer = setTimeout(resolve, Number.isFinite(waitMs) ? Math.max(waitMs, 10) : 1000);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  // -------------------------------------------------------------------------------------------
  // Speaking

  private output(active: ActiveTurn, metrics: TurnMetrics | null, speechEndedAt: number | null): ReplyOutput {
    const { session } = this;
    if (session.media === 'text') return new TextReply(session);
    return new AudioReply({
      session,
      tts: session.models.tts,
      signal: active.controller.signal,
      idleMs: this.modelTimeoutMs,
      onFirstByte: (ms) => {
        if (metrics && metrics.ttsFirstByteMs === null) metrics.ttsFirstByteMs = ms;
      },
      onFirstPacket: (sentAt) => {
        if (metrics && metrics.voiceToVoiceMs === null && speechEndedAt !== null) {
          metrics.voiceToVoiceMs = Math.max(0, sentAt - speechEndedAt);
        }
      },
    });
  }

  private begin(): ActiveTurn {
    const controller = new AbortController();
    const onEnd = () => controller.abort(this.session.signal.reason);
    if (this.session.signal.aborted) onEnd();
    else this.session.signal.addEventListener('abort', onEnd, { once: true });
    controller.signal.addEventListener(
      'abort',
      () => this.session.signal.removeEventListener('abort', onEnd),
      {
        once: true,
      },
    );
    const active: ActiveTurn = {
      controller,
      output: null,
      interrupted: false,
      speech: this.listening?.agentSpeaks() ?? null,
    };
    this.active = active;
    return active;
  }

  private done(active: ActiveTurn): void {
    if (this.active === active) this.active = null;
    if (!active.controller.signal.aborted) active.controller.abort();
    if (active.speech) this.listening?.agentDone(active.speech);
    this.touch();
  }

  /** Says a fixed line (the first message, the voicemail message): no model, same barge-in rules. */
  private async speakLine(text: string): Promise<Outcome> {
    const active = this.begin();
    const output = this.output(active, null, null);
    active.output = output;
    try {
      for (const sentence of splitAll(text)) output.add(sentence);
      const heard = await this.heard(output);
      this.addAgent(heard.text, []);
      return this.session.signal.aborted ? 'ended' : 'continue';
    } finally {
      this.done(active);
    }
  }

  private async heard(output: ReplyOutput): Promise<Heard> {
    try {
      return await output.finish();
    } catch (error) {
      throw new ModelStageError('tts', error);
    }
  }

  /**
   * One agent turn: the model's reply streamed and spoken sentence by sentence, its tool calls run
   * (at most maxToolRounds rounds of them; then the model answers without tools), until it answers
   * in words only, the call ends, or the callee barges in.
   */
  private async respond(chat: ChatModel, input: CalleeInput | null): Promise<Outcome> {
    const metrics: TurnMetrics | null = input
      ? {
          endpointingMs: input.endpointingMs,
          sttMs: input.sttMs,
          llmFirstTokenMs: null,
          ttsFirstByteMs: null,
          voiceToVoiceMs: null,
        }
      : null;
    const active = this.begin();
    try {
      for (let round = 0; ; round++) {
        const offerTools = round < this.maxToolRounds;
        const output = this.output(active, metrics, input?.speechEndedAt ?? null);
        active.output = output;
        let reply: { text: string; calls: ChatToolCall[] };
        try {
          reply = await this.stream(chat, offerTools, active, output, round === 0 ? metrics : null);
        } catch (error) {
          // Interrupted or over: what was heard goes in the history. A failure: the sentences that
          // were complete play out first, then the apology.
          if (active.controller.signal.aborted) output.stop();
          const heard = await output.finish().catch(() => ({ text: '', interrupted: true }));
          this.addAgent(heard.text, []);
          if (active.interrupted) return 'continue';
          if (this.session.signal.aborted) return 'ended';
          throw new ModelStageError('llm', error);
        }
        const calls = offerTools ? reply.calls : [];
        // HTTP tools start while the reply's words are still playing ("Let me check that").
        const running = calls.map((call) =>
          isBuiltIn(call.function.name) ? null : this.callTools.http(call, active.controller.signal),
        );
        const heard = await this.heard(output);
        if (heard.interrupted) {
          this.addAgent(heard.text, []);
          return active.interrupted ? 'continue' : 'ended';
        }
        this.addAgent(heard.text, calls);
        if (calls.length === 0) {
          if (saysGoodbye(heard.text)) {
            this.log?.info('the agent said goodbye: hanging up');
            this.end('agent-ended');
            return 'ended';
          }
          return 'continue';
        }
        for (const [index, call] of calls.entries()) {
          // Every tool call gets its answer in the history (the chat API refuses one without),
          // even those the callee's barge-in left unrun.
          const result = active.interrupted
            ? {
                content: JSON.stringify({ ok: false, error: 'not run: the callee interrupted' }),
                ends: false,
              }
            : await (running[index] ?? this.callTools.builtIn(call, active.controller.signal));
          this.history.push({ role: 'tool', tool_call_id: call.id, content: result.content });
          if (result.ends) return 'ended';
        }
        if (active.interrupted) return 'continue';
      }
    } finally {
      if (metrics) this.session.addTurnMetrics(metrics);
      this.done(active);
    }
  }

  /** Streams one model reply into `output`, sentence by sentence; returns its text and tool calls. */
  private async stream(
    chat: ChatModel,
    offerTools: boolean,
    active: ActiveTurn,
    output: ReplyOutput,
    metrics: TurnMetrics | null,
  ): Promise<{ text: string; calls: ChatToolCall[] }> {
    const splitter = new SentenceSplitter();
    const calls: ChatToolCall[] = [];
    let text = '';
    const started = Date.now();
    const messages = [...this.history];
    const tools = offerTools ? this.tools : undefined;
    const deltas = guardedStream(
      (signal) => chat.stream({ messages, ...(tools ? { tools } : {}), signal }),
      active.controller.signal,
      this.modelTimeoutMs,
      `chat model ${chat.model}`,
    );
    for await (const delta of deltas) {
      if (metrics && metrics.llmFirstTokenMs === null) metrics.llmFirstTokenMs = Date.now() - started;
      if (delta.type === 'tool_call') {
        calls.push(delta.call);
        continue;
      }
      text += delta.text;
      for (const sentence of splitter.push(delta.text)) output.add(sentence);
    }
    for (const sentence of splitter.flush()) output.add(sentence);
    return { text, calls };
  }

  // -------------------------------------------------------------------------------------------
  // History, ending, failing

  private addUser(text: string): void {
    const last = this.history.at(-1);
    // Two callee turns in a row (the agent was cut off before a word went out) make one message.
    if (last?.role === 'user') last.content = `${last.content} ${text}`;
    else this.history.push({ role: 'user', content: text });
  }

  /** The agent's words as the callee heard them, in the transcript and the model's history. */
  private addAgent(text: string, calls: ChatToolCall[]): void {
    const words = text.trim();
    if (words !== '') this.session.addTurn('assistant', words);
    if (words === '' && calls.length === 0) return;
    this.history.push({
      role: 'assistant',
      content: words === '' ? null : words,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    });
  }

  private end(reason: Parameters<ConversationSession['hangup']>[0], failure?: string): void {
    this.finished = true;
    this.session.hangup(reason, failure);
  }

  /**
   * A model failed: a short apology (the fallback voice if speech itself failed), then the end
   * reason of the stage that failed (model-, stt- or tts-unavailable); a failure of no stage is
   * `error`. Each is a service failure: not charged, the contact keeps its attempt.
   */
  private async fail(error: unknown): Promise<void> {
    if (this.failing) return;
    this.failing = true;
    // Whatever the agent was saying gives way to the apology.
    this.active?.output?.stop();
    this.active?.controller.abort();
    const stage = error instanceof ModelStageError ? error.stage : 'llm';
    this.log?.warn({ err: error, stage }, 'the conversation failed: apologising and hanging up');
    const { session } = this;
    try {
      if (session.media === 'text') {
        session.sayText(APOLOGY);
        session.addTurn('assistant', APOLOGY);
      } else {
        const fallback = this.options.fallbackTts;
        const voices = !fallback
          ? [session.models.tts]
          : stage === 'tts'
            ? [fallback]
            : [session.models.tts, fallback];
        await speakApology(session, voices, this.modelTimeoutMs, this.log);
      }
    } finally {
      this.end(
        error instanceof ModelStageError ? STAGE_REASONS[error.stage] : 'error',
        error instanceof Error ? error.message : String(error),
      );
    }
  }
}

/** The text cut into sentences (a fixed line, spoken with the same pipelining as a reply). */
function splitAll(text: string): string[] {
  const splitter = new SentenceSplitter();
  return [...splitter.push(text), ...splitter.flush()];
}
