import fs from 'node:fs';
import type { Logger } from 'pino';
import {
  agentAiSettings,
  type EndedReason,
  type ToolCallRecord,
  type TurnMetrics,
} from '../domain/agent-call.js';
import type { FinalCallStatus, TranscriptEntry } from '../domain/call.js';
import { unavailableReason } from '../domain/dependencies.js';
import { isServiceReason } from '../domain/failure.js';
import { isOperatorHangup, type LiveReply } from '../domain/live-call.js';
import type { DependencyGate, DialAgent, LiveCallChannel, LoadGauge, RecordingStore } from '../ports.js';
import { BEEP_REASON, listenForVerdict, waitForGreetingEnd } from './amd.js';
import type {
  CallTransport,
  ConversationEngine,
  ConversationSession,
  PlayResult,
  VoiceModels,
} from './contracts.js';
import { APOLOGY, APOLOGY_LANGUAGE } from './engines/apology.js';
import { LiveLink } from './live-link.js';

/**
 * The answered-call session: everything that happens once a call is answered, the same on every
 * transport (SIP/RTP, the simulator's text, a browser later). It runs the AMD gate (no audio and
 * no engine before the verdict), leaves the voicemail message on a machine, hands a person to the
 * conversation engine, holds the call to its longest duration, keeps the transcript, the tool
 * calls and the turn metrics, decides why the call ended, hangs up, and keeps the recording.
 */

export interface AnsweredCallOptions {
  callId: string;
  transport: CallTransport;
  agent: DialAgent;
  contact: { id: string; name: string };
  /** Values for the agent's {{variables}} (DialRequest.variables). */
  variables?: Record<string, string>;
  engine: ConversationEngine;
  models: VoiceModels;
  /** Answering-machine detection (OUTDIAL_AMD); off, every answer is taken for a person. */
  amd: boolean;
  /** Audio heard without an AMD decision after which the far end is taken for a person (default 3000 ms). */
  amdMaxMs?: number;
  /** How long a machine's greeting is waited on for its beep or silence (default 30 s). */
  voicemailWaitMs?: number;
  /** OUTDIAL_MAX_CALL_SECONDS in ms: the longest any call is up; an agent's maxDurationSeconds is capped by it. */
  maxCallMs: number;
  /**
   * Aborted when this process stops: the call is hung up as if the agent ended it
   * (`agent-ended`), so a stop never leaves a call up. Aborted with OPERATOR_HANGUP (an operator
   * hung up before the agent took commands), it ends `operator-ended`.
   */
  stop?: AbortSignal;
  /** Where the transport's recording is kept; without one, the recording is dropped. */
  recordings?: RecordingStore;
  /**
   * Live call control: the call's events are published here, and while the agent talks with a
   * person its commands (hangup, transfer, say) are served from here. Without it, neither.
   */
  live?: LiveCallChannel;
  /**
   * This process's load: the call counts as an AI call from here to its hang-up, and one answered
   * while the process already holds its most (a race past the dispatcher's gate: a single dial, a
   * browser call) ends at once as `overloaded` after the apology. Without it, nothing is counted.
   */
  load?: LoadGauge;
  /**
   * The engine's models' circuit breakers: a call answered while one is open ends at once as a
   * failure of ours (`model-unavailable`, `stt-unavailable`, `tts-unavailable`), before any
   * greeting, with the apology when speech is up. Without it, the engine finds out itself.
   */
  dependencies?: DependencyGate;
  logger?: Logger;
}

export interface AnsweredCallOutcome {
  status: FinalCallStatus;
  endedReason: EndedReason;
  error: string | null;
  transcription: TranscriptEntry[];
  turns: TurnMetrics[];
  toolCalls: ToolCallRecord[];
}

const DEFAULT_AMD_MAX_MS = 3000;
/** An operator's transfer waits this long for the far end's REFER answer and NOTIFY (as the engine's tool does). */
const OPERATOR_TRANSFER_MS = 30_000;
const NOT_PLAYED: PlayResult = { playedMs: 0, interrupted: true };

/** Runs one answered call on `transport` until it ends; never throws. */
export async function runAnsweredCall(options: AnsweredCallOptions): Promise<AnsweredCallOutcome> {
  const { transport, agent, logger } = options;
  const variables = options.variables ?? {};
  const config = agentAiSettings(agent.details, variables);
  const transcription: TranscriptEntry[] = [];
  const turns: TurnMetrics[] = [];
  const toolCalls: ToolCallRecord[] = [];
  let reason: EndedReason | null = null;
  let error: string | null = null;
  let status: FinalCallStatus = 'COMPLETED';
  /** What an engine that ended the call with `error` said failed. */
  let failed: string | null = null;

  // The call's own end: the first reason given wins, and queued speech is dropped at once.
  const up = new AbortController();
  const live = options.live ? new LiveLink(options.live, options.callId, logger) : null;
  live?.setStatus('answered');
  const end = (why: EndedReason) => {
    if (reason !== null) return;
    reason = why;
    live?.setStatus('ending', why);
    up.abort();
  };
  up.signal.addEventListener('abort', () => transport.stopPlayback(), { once: true });
  const farEndGone = () => end('callee-hung-up');
  if (transport.signal.aborted) farEndGone();
  else transport.signal.addEventListener('abort', farEndGone, { once: true });
  const stopped = () => end(isOperatorHangup(options.stop) ? 'operator-ended' : 'agent-ended');
  if (options.stop?.aborted) stopped();
  else options.stop?.addEventListener('abort', stopped, { once: true });
  const limitMs = Math.min(
    options.maxCallMs,
    config.maxDurationSeconds !== null ? config.maxDurationSeconds * 1000 : Number.POSITIVE_INFINITY,
  );
  const limit = setTimeout(() => end('max-duration'), limitMs);

  const addTurn = (role: TranscriptEntry['role'], content: string) => {
    const text = content.trim();
    if (text === '') return;
    transcription.push({ role, content: text });
    live?.turn(role, text);
  };

  const place = options.load?.startAiCall(options.callId);
  try {
    const down = place?.over ? null : (options.dependencies?.unavailable() ?? null);
    const verdict = place?.over ? 'overloaded' : down ? 'unavailable' : await detect(options, up.signal);
    if (reason !== null) {
      // Gone before a verdict (or before its session began): nobody was talked to.
    } else if (down) {
      // The engine's model is known down (its breaker is open): said so and ended before any
      // greeting, a failure of ours, rather than a greeting followed by the apology.
      logger?.warn(
        { callId: options.callId, dependency: down.name },
        'answered while a model is down: ending it',
      );
      status = 'FAILED';
      error = `${down.name} is unavailable (its circuit breaker is open)`;
      // With the speech server down the apology cannot be spoken; in text it still can.
      if (down.kind !== 'tts' || transport.media === 'text') await sayApology(options, up.signal, addTurn);
      end(unavailableReason(down.kind));
    } else if (verdict === 'overloaded') {
      // Answered where it cannot be served: said so and ended at once, a failure of ours (not
      // charged; a campaign contact keeps its attempt), rather than dead air from a busy worker.
      logger?.warn({ callId: options.callId }, 'answered past the AI-call bound: ending it as overloaded');
      status = 'FAILED';
      error = 'The worker that answered was at its most AI calls at once (OUTDIAL_MAX_AI_CALLS)';
      await sayApology(options, up.signal, addTurn);
      end('overloaded');
    } else if (verdict === 'machine' || verdict === 'beep') {
      status = 'VOICEMAIL';
      live?.setStatus('voicemail');
      error = await leaveVoicemail(options, config.voicemailMessage, verdict, up.signal, addTurn);
      end('voicemail');
    } else {
      const operatorListeners = new Set<(text: string) => void>();
      const session: ConversationSession = {
        callId: options.callId,
        agent,
        contact: options.contact,
        config,
        variables,
        models: options.models,
        media: transport.media,
        onAudio: (listener) => transport.onAudio(listener),
        play: (pcm, onFirstPacket) =>
          up.signal.aborted ? Promise.resolve(NOT_PLAYED) : transport.play(pcm, onFirstPacket),
        stopPlayback: () => transport.stopPlayback(),
        sayText: (text) => {
          if (!up.signal.aborted) transport.sayText(text);
        },
        onText: (listener) => transport.onText(listener),
        sendDtmf: (digits) => (up.signal.aborted ? Promise.resolve(false) : transport.sendDtmf(digits)),
        transfer: async (to) => {
          if (up.signal.aborted) return { ok: false, reason: 'the call is over' };
          const result = await transport.transfer(to);
          // Transferred: the far end talks to someone else now; our leg of the call ends.
          if (result.ok) end('transferred');
          return result;
        },
        addTurn,
        addToolCall: (call) => {
          toolCalls.push(call);
          live?.toolCall(call);
        },
        addTurnMetrics: (turn) => {
          turns.push(turn);
        },
        hangup: (why, failure) => {
          if (isServiceReason(why) && failure && reason === null) failed = failure;
          end(why);
        },
        onOperatorSay: (listener) => {
          operatorListeners.add(listener);
          return () => operatorListeners.delete(listener);
        },
        signal: up.signal,
        ...(logger ? { logger: logger.child({ callId: options.callId }) } : {}),
      };
      live?.serve(
        (command) => {
          switch (command.action) {
            case 'hangup':
              end('operator-ended');
              return Promise.resolve({ ok: true, outcome: 'ended' });
            case 'transfer':
              return operatorTransfer(session, command.to);
            case 'say':
              if (up.signal.aborted) return Promise.resolve(CALL_OVER);
              if (operatorListeners.size > 0)
                for (const listener of operatorListeners) listener(command.text);
              else void sayForOperator(options, session, command.text, addTurn);
              return Promise.resolve({ ok: true, outcome: 'queued' });
            default: {
              const unreachable: never = command;
              return unreachable;
            }
          }
        },
        () => ({ transcription: [...transcription], toolCalls: [...toolCalls] }),
      );
      const failure = await converse(options.engine, session, up.signal);
      if (failure && reason === null) {
        logger?.error({ err: failure, callId: options.callId }, 'the conversation engine failed');
        status = 'FAILED';
        error = `The conversation failed: ${failure.message}`;
        end('error');
      }
      end('agent-ended');
    }
  } catch (failure) {
    // Only the session's own steps get here (the engine's failures are caught above).
    logger?.error({ err: failure, callId: options.callId }, 'an answered call failed');
    status = 'FAILED';
    error = `The call failed after it was answered: ${(failure as Error).message}`;
    end('error');
  }
  // An engine that handled its own failure (an apology, then a hangup naming what failed:
  // model-unavailable, stt-unavailable, tts-unavailable, error) ends FAILED too, with what it said
  // failed: a service failure (domain/failure.ts).
  if (isServiceReason(reason) && status === 'COMPLETED') {
    status = 'FAILED';
    error ??= failed
      ? `The conversation failed: ${failed}`
      : 'The agent ended the call after a failure (a model or speech service did not answer)';
  }
  clearTimeout(limit);
  await live?.close();
  transport.signal.removeEventListener('abort', farEndGone);
  options.stop?.removeEventListener('abort', stopped);
  transport.hangup();
  place?.end();
  await keepRecording(options);
  return {
    status,
    // A machine's call is `voicemail` whatever ended it (the message played out, or not).
    endedReason: status === 'VOICEMAIL' ? 'voicemail' : (reason ?? 'agent-ended'),
    error,
    transcription,
    turns,
    toolCalls,
  };
}

const CALL_OVER: LiveReply = { ok: false, outcome: 'refused', reason: 'the call is over' };

/** An operator's blind transfer: the far end's answer, or why it was not done. */
async function operatorTransfer(session: ConversationSession, to: string): Promise<LiveReply> {
  if (session.signal.aborted) return CALL_OVER;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ ok: false; reason: string }>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          ok: false,
          reason: `the far end did not answer the transfer within ${OPERATOR_TRANSFER_MS / 1000} s`,
        }),
      OPERATOR_TRANSFER_MS,
    );
  });
  try {
    const result = await Promise.race([session.transfer(to), late]);
    return result.ok
      ? { ok: true, outcome: 'transferred' }
      : { ok: false, outcome: 'refused', reason: result.reason };
  } catch (error) {
    return { ok: false, outcome: 'refused', reason: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An operator's line for an engine that does not take it itself: said at once, in text or
 * spoken with the call's text-to-speech, and kept in the transcript as the agent's.
 */
async function sayForOperator(
  options: AnsweredCallOptions,
  session: ConversationSession,
  text: string,
  addTurn: (role: TranscriptEntry['role'], content: string) => void,
): Promise<void> {
  if (session.media === 'text') {
    session.sayText(text);
    addTurn('assistant', text);
    return;
  }
  try {
    await speakLine(options, text, session.signal, (pcm) => session.play(pcm), addTurn);
  } catch (failure) {
    options.logger?.warn({ err: failure, callId: options.callId }, "could not speak an operator's line");
  }
}

/** The engines' apology, said before an overloaded call ends; one that cannot be said is skipped. */
async function sayApology(
  options: AnsweredCallOptions,
  signal: AbortSignal,
  addTurn: (role: TranscriptEntry['role'], content: string) => void,
): Promise<void> {
  const { transport } = options;
  if (transport.media === 'text') {
    transport.sayText(APOLOGY);
    addTurn('assistant', APOLOGY);
    return;
  }
  try {
    await speakLine(options, APOLOGY, signal, (pcm) => transport.play(pcm), addTurn, APOLOGY_LANGUAGE);
  } catch (failure) {
    options.logger?.warn({ err: failure, callId: options.callId }, 'could not speak the apology');
  }
}

/**
 * The AMD gate: 'human' (an unknown verdict, or AMD off, is a person), 'machine', or 'beep' (a
 * machine whose beep was heard already).
 */
async function detect(
  options: AnsweredCallOptions,
  signal: AbortSignal,
): Promise<'human' | 'machine' | 'beep'> {
  const { transport } = options;
  if (!options.amd) return 'human';
  if (transport.media === 'text') {
    if (!transport.amd) return 'human';
    return Promise.race([transport.amd(), aborted(signal).then(() => 'human' as const)]);
  }
  const verdict = await listenForVerdict(
    (listener) => transport.onAudio(listener),
    signal,
    options.amdMaxMs ?? DEFAULT_AMD_MAX_MS,
  );
  if (verdict.kind === 'machine') {
    options.logger?.info({ callId: options.callId, reason: verdict.reason }, 'answering machine');
    return verdict.reason === BEEP_REASON ? 'beep' : 'machine';
  }
  return 'human';
}

/**
 * The machine path: after the greeting's beep (or its silence) the agent's voicemailMessage is
 * spoken and played out; none, and the call is hung up at once. Returns an error to report, or
 * null. A failure to speak it still ends the call as VOICEMAIL.
 */
async function leaveVoicemail(
  options: AnsweredCallOptions,
  message: string | null,
  verdict: 'machine' | 'beep',
  signal: AbortSignal,
  addTurn: (role: TranscriptEntry['role'], content: string) => void,
): Promise<string | null> {
  const { transport } = options;
  if (!message) return null;
  if (transport.media === 'text') {
    transport.sayText(message);
    addTurn('assistant', message);
    return null;
  }
  const why = await waitForGreetingEnd((listener) => transport.onAudio(listener), signal, {
    maxWaitMs: options.voicemailWaitMs ?? 30_000,
    // Decided on the beep itself: the greeting ends when the tone stops.
    beepHeard: verdict === 'beep',
  });
  if (why === 'ended') return null;
  options.logger?.info({ callId: options.callId, after: why }, 'leaving the voicemail message');
  try {
    await speakLine(options, message, signal, (pcm) => transport.play(pcm), addTurn);
    return null;
  } catch (failure) {
    if (signal.aborted) return null;
    options.logger?.warn({ err: failure, callId: options.callId }, 'could not leave the voicemail message');
    return `The voicemail message could not be spoken: ${(failure as Error).message}`;
  }
}

/**
 * A fixed line spoken in the agent's voice (its voiceId, speed and language): each chunk is
 * queued as it comes, the line goes in the transcript once synthesized, then it is played out.
 */
async function speakLine(
  options: AnsweredCallOptions,
  text: string,
  signal: AbortSignal,
  play: (pcm: Int16Array) => Promise<PlayResult>,
  addTurn: (role: TranscriptEntry['role'], content: string) => void,
  language: string | null = options.agent.language,
): Promise<void> {
  const details = options.agent.details;
  const plays: Array<Promise<PlayResult>> = [];
  for await (const pcm of options.models.tts.synthesize(text, {
    voiceId: typeof details.voiceId === 'string' ? details.voiceId : null,
    speed: typeof details.voiceSpeed === 'number' ? details.voiceSpeed : null,
    language,
    signal,
  })) {
    if (signal.aborted) break;
    plays.push(play(pcm));
  }
  addTurn('assistant', text);
  await Promise.all(plays);
}

/**
 * Runs the engine until it returns or the call ends, whichever comes first (an engine that does
 * not notice the end never holds the call). Returns its failure, or null.
 */
async function converse(
  engine: ConversationEngine,
  session: ConversationSession,
  signal: AbortSignal,
): Promise<Error | null> {
  const running = engine.converse(session).then(
    () => null,
    (failure: unknown) => (failure instanceof Error ? failure : new Error(String(failure))),
  );
  return Promise.race([running, aborted(signal).then(() => null)]);
}

/** Hands the transport's finished recording to the store (or removes it without one). */
async function keepRecording(options: AnsweredCallOptions): Promise<void> {
  try {
    const file = await options.transport.finish?.();
    if (!file) return;
    if (options.recordings) await options.recordings.put(options.callId, file);
    else await fs.promises.rm(file.path, { force: true });
  } catch (failure) {
    options.logger?.warn({ err: failure, callId: options.callId }, 'could not keep the recording');
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
