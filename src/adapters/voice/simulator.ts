import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { billedSecondsOf } from '../../domain/billing.js';
import type { TranscriptEntry } from '../../domain/call.js';
import type {
  CallEndedEvent,
  Clock,
  DependencyGate,
  DialRecord,
  DialRecords,
  DialRequest,
  LiveCallChannel,
  LoadGauge,
  ProviderCallState,
  Recording,
  RecordingStore,
  VoiceProvider,
} from '../../ports.js';
import { systemClock } from '../../ports.js';
import type { ConversationEngine, VoiceModels } from '../../voice/contracts.js';
import { runAnsweredCall } from '../../voice/session.js';
import { CallHost, isOperatorHangup } from './call-host.js';
import { cutOffAfterAnswer } from './cut-off.js';
import { publishOnce } from './publish-once.js';
import { SimulatedCallee } from './sim-persona.js';
import { spokenConversationWav, spokenSeconds } from './sim-recording.js';
import { type SimTransportOptions, SimulatedTextTransport } from './sim-transport.js';
import {
  conversation,
  type SimulatedOutcome,
  simulatedOutcome,
  VOICEMAIL_TRANSCRIPT,
} from './simulator-script.js';

export interface SimulatorOptions {
  ringMs: number;
  talkMs: number;
  /**
   * The shared dial records: a dial goes out only when its record turns sent (so a call id is
   * dialed at most once across processes and hosts), and that moment is the call's start time.
   */
  records?: DialRecords;
  /**
   * A folder where each dial the network took leaves one file named by its call id: the simulated
   * network's own log, for tests and accounting (`readRecord`), written when a record turns sent
   * and again (once only) by a process that rebuilds a gone owner's call. It decides nothing.
   */
  dialsDir?: string;
  clock?: Clock;
  onError?: (error: unknown, event: CallEndedEvent) => void;
  /**
   * AI conversations (an LLM is configured): an answered call runs the answered-call session
   * with this engine on a text transport whose callee is a persona of the number, and ends when
   * the conversation does. Without it, answered calls play the canned scripts for talkMs.
   */
  conversation?: SimulatedConversations;
  /** Where the spoken recordings are kept once made (made on the first request); memory without. */
  recordings?: RecordingStore;
  /** Live call control: every held call, canned or not, takes operators' hang-ups (see CallHost). */
  live?: LiveCallChannel;
  logger?: Logger;
}

export interface SimulatedConversations {
  engine: ConversationEngine;
  /** The models the engine speaks through; the persona answers through `models.chat` too. */
  models: VoiceModels;
  /** OUTDIAL_MAX_CALL_SECONDS in ms. */
  maxCallMs: number;
  /** Live call control: the conversations' events and operators' commands (see session.ts). */
  live?: LiveCallChannel;
  /** This process's load: each answered conversation is an AI call (see session.ts). */
  load?: LoadGauge;
  /** The engine's models' breakers: an answered call whose model is known down ends at once (see session.ts). */
  dependencies?: DependencyGate;
  /** The callee's pace (think time, leave grace, hello): tests shorten them. */
  callee?: Pick<SimTransportOptions, 'thinkMs' | 'leaveGraceMs' | 'helloAfterMs'> & {
    maxReplies?: number;
  };
}

/** The simulated far end hangs up this long after the call's limit, if the session has not. */
const TRANSPORT_GRACE_MS = 5000;
/** Recordings kept in memory without a store: a few, as a cache for repeated downloads. */
const MEMORY_RECORDINGS = 16;
interface Plan {
  /** Milliseconds from the dial until the call ends. */
  totalMs: number;
  ended: (dialedAt: Date) => CallEndedEvent;
}

const MAX_RECORDED_DIALS = 100_000;

export interface SimulatedDial {
  callId: string;
  to: string;
  attempt: number;
  at: Date;
}

/**
 * Simulated telephony. A call's outcome is a pure function of the number and the attempt, and its
 * timing of the dial time, so after its process dies `lookup` rebuilds any call from its dial
 * record: a call whose time is up ends at once, one still running is picked up again. An AI
 * conversation (`conversation` set) cannot be rebuilt: one cut off by its process's death is
 * settled as the SIP provider settles a cut-off answered call.
 */
export class SimulatedVoiceProvider implements VoiceProvider {
  readonly name = 'simulator';
  /** The most recent dials this process made, oldest first (at most 100,000): tests and accounting read it. */
  readonly dials: SimulatedDial[] = [];
  /** Ids already dialed (bounded like `dials`): the idempotency record. */
  private readonly dialed = new Set<string>();
  /**
   * This process's calls, ringing or talking (their stop, and close's wait for their ends), and
   * each end reported once: an AI conversation's kept with its dial record first.
   */
  private readonly host: CallHost;
  private readonly clock: Clock;
  /** Recordings made or being made, without a store (least recently used first). */
  private readonly made = new Map<string, Promise<{ wav: Buffer; spoken: boolean }>>();

  constructor(private readonly options: SimulatorOptions) {
    this.clock = options.clock ?? systemClock;
    this.host = new CallHost({
      label: 'simulated',
      ...(options.records ? { records: options.records } : {}),
      ...(options.live ? { live: options.live } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      onError: (error, event) => options.onError?.(error, event),
    });
  }

  nameFor(): string {
    return this.name;
  }

  /** Held by the engine only when simulated calls hold AI conversations (an LLM engine). */
  holdsConversations(): boolean {
    return this.options.conversation !== undefined;
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.host.onCallEnded(handler);
  }

  async dial(request: DialRequest): Promise<void> {
    if (this.dialed.has(request.callId)) return;
    // A start admitted by the shared start log is taken at that moment (within its reply's delay).
    const at = request.startAt ?? this.clock.now();
    // Taken before the record is asked, so a second dial of this id in this process waits for nothing.
    this.dialed.add(request.callId);
    try {
      if (
        this.options.records &&
        !(await this.options.records.send(request.callId, this.name, at, request.progressEvents))
      )
        return;
    } catch (error) {
      this.dialed.delete(request.callId);
      throw error;
    }
    if (this.options.dialsDir) this.log(request, at);
    this.dials.push({ callId: request.callId, to: request.to, attempt: request.attempt, at });
    if (this.dials.length > MAX_RECORDED_DIALS) {
      const dropped = this.dials.splice(0, this.dials.length - MAX_RECORDED_DIALS);
      for (const dial of dropped) this.dialed.delete(dial.callId);
    }
    this.schedule(request, at);
  }

  /**
   * A call whose owner is gone: its end when its time is up, rebuilt from the time it went out;
   * otherwise this process takes it over (one process does) and reports its end when it comes.
   * An AI conversation past its ringing is not rebuilt: it is settled as cut off.
   */
  async lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    if (this.host.holds(request.callId)) return { known: true, ended: null };
    if (record.ended) return { known: true, ended: record.ended };
    const dialedAt = record.sentAt;
    if (!dialedAt) return { known: false, ended: null };
    // The simulated network is its records: a call sent is one it took, even when the process
    // that sent it died before writing the log line (the line is published once, whoever does).
    if (this.options.dialsDir) this.log(request, dialedAt);
    const now = this.clock.now().getTime();
    if (this.conversing(request)) {
      const answerAt = dialedAt.getTime() + this.options.ringMs;
      if (record.answeredAt || answerAt <= now) {
        return {
          known: true,
          ended: cutOffAfterAnswer(request.callId, {
            ...record,
            answeredAt: record.answeredAt ?? new Date(answerAt),
          }),
        };
      }
    } else {
      const plan = this.plan(request);
      if (dialedAt.getTime() + plan.totalMs <= now) return { known: true, ended: plan.ended(dialedAt) };
    }
    const records = this.options.records;
    if (records && record.owner !== records.owner && !(await records.adopt(request.callId, record.owner)))
      return { known: true, ended: null }; // another process took it over first
    this.schedule(request, dialedAt);
    return { known: true, ended: null };
  }

  /**
   * The call's transcript spoken with espeak-ng (tones without it), made on the first request
   * and kept: in the recording store when there is one, else in memory for the last few calls.
   */
  async recording(call: {
    id: string;
    duration: number;
    transcription: TranscriptEntry[];
  }): Promise<Recording | null> {
    if (call.duration <= 0) return null;
    const store = this.options.recordings;
    if (store) {
      const kept = await store.get(call.id);
      if (kept) return kept;
    }
    let making = this.made.get(call.id);
    if (!making) {
      const made = this.makeRecording(call, store);
      making = made;
      this.made.set(call.id, made);
      // With a store, only recordings being made are held here (two requests share one run);
      // without, the last few stay as the cache. Tones that stood in for speech, or a failure,
      // are not kept: the next request tries again.
      const forget = () => {
        if (this.made.get(call.id) === made) this.made.delete(call.id);
      };
      made.then((result) => (store || !result.spoken ? forget() : undefined), forget);
      for (const oldest of this.made.keys()) {
        if (this.made.size <= MEMORY_RECORDINGS) break;
        this.made.delete(oldest);
      }
    }
    return { contentType: 'audio/wav', body: (await making).wav };
  }

  private async makeRecording(
    call: { id: string; duration: number; transcription: TranscriptEntry[] },
    store: RecordingStore | undefined,
  ): Promise<{ wav: Buffer; spoken: boolean }> {
    const made = await spokenConversationWav(call.transcription, call.duration);
    if (!made.spoken) {
      this.options.logger?.warn(
        { callId: call.id },
        'a simulated recording is tones: espeak-ng did not speak it',
      );
    }
    if (store && made.spoken) {
      try {
        const scratch = await store.scratchPath(call.id);
        await fs.promises.writeFile(scratch, made.wav);
        await store.put(call.id, { path: scratch, contentType: 'audio/wav' });
      } catch (error) {
        // The recording is still served; it is made again on the next request.
        this.options.logger?.warn({ err: error, callId: call.id }, 'could not keep a simulated recording');
      }
    }
    return made;
  }

  /**
   * Stops this process's calls: canned ones are left to `lookup` (rebuilt from their dial time),
   * AI conversations are hung up and reported as cut off (before or after their answer).
   */
  async close(): Promise<void> {
    await this.host.stopAll();
  }

  /** Every dial in the dials folder (all processes), oldest first. */
  static readRecord(dialsDir: string): SimulatedDial[] {
    if (!fs.existsSync(dialsDir)) return [];
    return fs
      .readdirSync(dialsDir)
      .filter((file) => file.endsWith('.json'))
      .map((file) => {
        const raw = JSON.parse(fs.readFileSync(path.join(dialsDir, file), 'utf8')) as Omit<
          SimulatedDial,
          'at'
        > & { at: string };
        return { ...raw, at: new Date(raw.at) };
      })
      .sort((a, b) => a.at.getTime() - b.at.getTime());
  }

  /** Adds the dial to the network's log (a file per call id, published whole). */
  private log(request: DialRequest, at: Date): void {
    const line: SimulatedDial = { callId: request.callId, to: request.to, attempt: request.attempt, at };
    publishOnce(this.options.dialsDir as string, `${request.callId}.json`, JSON.stringify(line));
  }

  /** Calls currently ringing or talking in this process. */
  get activeCalls(): number {
    return this.host.size;
  }

  /** True when this call, once answered, holds an AI conversation rather than a canned one. */
  private conversing(request: DialRequest): boolean {
    return !!this.options.conversation && answered(simulatedOutcome(request.to, request.attempt));
  }

  private schedule(request: DialRequest, dialedAt: Date): void {
    if (this.conversing(request)) {
      this.ring(request, dialedAt);
      return;
    }
    const stop = this.host.take(request.callId);
    if (!stop) return;
    const plan = this.plan(request);
    const now = this.clock.now().getTime();
    const wait = Math.max(dialedAt.getTime() + plan.totalMs - now, 0);
    const answeredAt = plan.ended(dialedAt).answeredAt;
    const done = new Promise<void>((resolve) => {
      // A stop leaves a canned call to `lookup`, which rebuilds it from its dial time: no end. An
      // operator's hang-up ends it now, and that end is kept with its record (it is not rebuilt).
      const leave = () => {
        clearTimeout(timer);
        clearTimeout(answer);
        if (isOperatorHangup(stop.signal)) {
          resolve(this.settle(operatorEnd(plan.ended(dialedAt), this.clock.now())));
          return;
        }
        this.host.release(request.callId);
        resolve();
      };
      const timer = setTimeout(() => {
        stop.signal.removeEventListener('abort', leave);
        resolve(this.report(plan.ended(dialedAt)));
      }, wait);
      // The answer is recorded when it happens (call.answered is queued there), as the AI
      // conversations and the SIP provider record theirs. A call picked up after its answer
      // records it at once; the record keeps the first answer only, so nothing is told twice.
      const answer = answeredAt
        ? setTimeout(() => this.recordAnswer(request, answeredAt), Math.max(answeredAt.getTime() - now, 0))
        : undefined;
      stop.signal.addEventListener('abort', leave, { once: true });
    });
    this.host.running(request.callId, done);
  }

  /**
   * The end of an AI conversation: kept with its dial record first (it cannot be rebuilt from the
   * number: if this process dies before the call row hears of it, `lookup` reads it there), then
   * reported.
   */
  private settle(event: CallEndedEvent): Promise<void> {
    return this.host.report(event);
  }

  /** A canned call's end: rebuilt from the number by any process, so not kept with its record. */
  private report(event: CallEndedEvent): Promise<void> {
    return this.host.report(event, { keep: false });
  }

  private recordAnswer(request: DialRequest, at: Date): void {
    const { callId } = request;
    this.options.records?.answered(callId, at, request.progressEvents).catch((error: unknown) => {
      this.options.logger?.warn({ err: error, callId }, 'could not record a simulated answer');
    });
  }

  /**
   * An AI call rings for ringMs after it went out, then the session holds its conversation. A
   * stop while it rings reports it cut off before the answer; a stop in the conversation hangs up.
   */
  private ring(request: DialRequest, dialedAt: Date): void {
    const stop = this.host.take(request.callId);
    if (!stop) return;
    const wait = Math.max(dialedAt.getTime() + this.options.ringMs - this.clock.now().getTime(), 0);
    const done = new Promise<void>((resolve) => {
      // Cut before the answer, as the SIP provider reports it: FAILED, nothing connected. An
      // operator's hang-up cancels it instead.
      const cut = () => {
        clearTimeout(timer);
        if (isOperatorHangup(stop.signal)) {
          resolve(this.settle(cancelledByOperator(request.callId, this.clock.now())));
          return;
        }
        resolve(
          this.settle({
            callId: request.callId,
            status: 'FAILED',
            duration: 0,
            answeredAt: null,
            endedAt: this.clock.now(),
            error: 'The call was cut off before an answer: the process that placed it stopped',
            transcription: [],
            endedReason: null,
          }),
        );
      };
      const timer = setTimeout(() => {
        stop.signal.removeEventListener('abort', cut);
        resolve(this.converse(request, stop.signal));
      }, wait);
      stop.signal.addEventListener('abort', cut, { once: true });
    });
    this.host.running(request.callId, done);
  }

  private async converse(request: DialRequest, stop: AbortSignal): Promise<void> {
    const settings = this.options.conversation as SimulatedConversations;
    const { logger } = this.options;
    const answeredAt = this.clock.now();
    const started = performance.now();
    this.recordAnswer(request, answeredAt);
    const outcome = simulatedOutcome(request.to, request.attempt);
    const names = {
      agentName: request.agent.agentName ?? request.agent.name,
      contactName: request.contact.name,
    };
    const callee =
      outcome.kind === 'conversation'
        ? new SimulatedCallee({
            script: outcome.script,
            ...names,
            chat: settings.models.chat,
            ...(settings.callee?.maxReplies ? { maxReplies: settings.callee.maxReplies } : {}),
          })
        : null; // the voicemail numbers: an answering machine
    const transport = new SimulatedTextTransport({
      callee,
      // A backstop only: the session ends the call at its own limit first (max-duration).
      maxCallMs: settings.maxCallMs + TRANSPORT_GRACE_MS,
      ...settings.callee,
      ...(logger ? { logger } : {}),
    });
    let stopped = false;
    // An operator's hang-up before the agent takes commands (the AMD gate) ends it as the operator's.
    const operator = new AbortController();
    const hangUp = () => {
      if (isOperatorHangup(stop)) {
        operator.abort(stop.reason);
        return;
      }
      stopped = true;
      transport.hangup();
    };
    if (stop.aborted) hangUp();
    else stop.addEventListener('abort', hangUp, { once: true });
    const result = await runAnsweredCall({
      callId: request.callId,
      transport,
      agent: request.agent,
      contact: request.contact,
      ...(request.variables ? { variables: request.variables } : {}),
      engine: settings.engine,
      models: settings.models,
      // The simulated network says who answered (the transport's verdict), whatever OUTDIAL_AMD says
      // of listening to real audio.
      amd: true,
      maxCallMs: settings.maxCallMs,
      stop: operator.signal,
      ...(settings.live ? { live: settings.live } : {}),
      ...(settings.load ? { load: settings.load } : {}),
      ...(settings.dependencies ? { dependencies: settings.dependencies } : {}),
      ...(logger ? { logger } : {}),
    });
    const endedAt = this.clock.now();
    // A text conversation takes seconds; the call lasts what its words take spoken (see docs/decisions.md).
    const elapsed = (performance.now() - started) / 1000;
    const duration = billedSecondsOf(Math.max(elapsed, spokenSeconds(result.transcription)));
    const cut = stopped && result.endedReason === 'callee-hung-up';
    await this.settle({
      callId: request.callId,
      status: cut ? 'FAILED' : result.status,
      duration,
      answeredAt,
      endedAt,
      error: cut ? `The call was cut off after ${duration} s connected: the process stopped` : result.error,
      transcription: result.transcription,
      endedReason: cut ? 'error' : result.endedReason,
      turns: result.turns,
      toolCalls: result.toolCalls,
    });
  }

  private plan(request: DialRequest): Plan {
    const { ringMs, talkMs } = this.options;
    const names = {
      agentName: request.agent.agentName ?? request.agent.name,
      contactName: request.contact.name,
    };
    const outcome = simulatedOutcome(request.to, request.attempt);
    const at = (dialedAt: Date, ms: number) => new Date(dialedAt.getTime() + ms);
    switch (outcome.kind) {
      case 'unanswered':
        return {
          totalMs: ringMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: outcome.status,
            duration: 0,
            answeredAt: null,
            endedAt: at(dialedAt, ringMs),
            error: outcome.error,
            transcription: [],
          }),
        };
      case 'voicemail': {
        // The machine's greeting is detected in a fraction of a normal conversation.
        const machineMs = Math.round(talkMs / 4);
        return {
          totalMs: ringMs + machineMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: 'VOICEMAIL',
            duration: billedSecondsOf(machineMs / 1000),
            answeredAt: at(dialedAt, ringMs),
            endedAt: at(dialedAt, ringMs + machineMs),
            error: null,
            transcription: VOICEMAIL_TRANSCRIPT(names),
          }),
        };
      }
      case 'conversation':
        return {
          totalMs: ringMs + talkMs,
          ended: (dialedAt) => ({
            callId: request.callId,
            status: 'COMPLETED',
            duration: billedSecondsOf(talkMs / 1000),
            answeredAt: at(dialedAt, ringMs),
            endedAt: at(dialedAt, ringMs + talkMs),
            error: null,
            transcription: conversation(outcome.script, names),
          }),
        };
      default: {
        const unreachable: never = outcome;
        return unreachable;
      }
    }
  }
}

/** A call cancelled by an operator while it rang: nothing connected, nothing charged. */
function cancelledByOperator(callId: string, endedAt: Date): CallEndedEvent {
  return {
    callId,
    status: 'NO_ANSWER',
    duration: 0,
    answeredAt: null,
    endedAt,
    error: 'Cancelled by the operator before an answer',
    transcription: [],
    endedReason: 'operator-ended',
  };
}

/**
 * A canned call an operator hung up at `now`: cancelled while it rang; once answered, ended with
 * the time connected so far and the lines said by then (the script spread evenly over its talk).
 */
function operatorEnd(planned: CallEndedEvent, now: Date): CallEndedEvent {
  const { answeredAt } = planned;
  if (!answeredAt || answeredAt.getTime() > now.getTime()) return cancelledByOperator(planned.callId, now);
  const plannedMs = planned.endedAt.getTime() - answeredAt.getTime();
  const talkedMs = Math.min(now.getTime() - answeredAt.getTime(), plannedMs);
  const lines = planned.transcription.length;
  const said = plannedMs > 0 ? Math.ceil((lines * talkedMs) / plannedMs) : lines;
  return {
    ...planned,
    duration: billedSecondsOf(talkedMs / 1000),
    endedAt: now,
    transcription: planned.transcription.slice(0, Math.max(1, said)),
    endedReason: 'operator-ended',
  };
}

function answered(outcome: SimulatedOutcome): boolean {
  return outcome.kind !== 'unanswered';
}
