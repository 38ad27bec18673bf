/**
 * The apology an engine speaks when its model fails mid-call, before it hangs up with `error`:
 * tried with each voice in turn (the call's own text-to-speech, then espeak-ng) until one plays.
 */
import type { Logger } from 'pino';
import type { ConversationSession, TextToSpeech } from '../contracts.js';
import { AudioReply, abortedPromise, StallError } from './llm-output.js';

/** Said when a model fails; English whatever the agent's language (no model is left to translate it). */
export const APOLOGY = "I'm sorry, something went wrong on my side, so I have to end the call here. Goodbye.";
export const APOLOGY_LANGUAGE = 'en-US';
/** The apology's own speech gets this long before the line is closed anyway. */
const APOLOGY_MS = 15_000;

/**
 * Speaks the apology on an audio call with the first of `voices` that works; adds it to the
 * transcript either way (the line is what the agent meant to say). `idleMs`: the longest wait on
 * a voice's next audio chunk.
 */
export async function speakApology(
  session: ConversationSession,
  voices: TextToSpeech[],
  idleMs: number,
  log: Logger | undefined,
): Promise<void> {
  for (const tts of voices) {
    if (await apologise(session, tts, idleMs, log)) break;
  }
  session.addTurn('assistant', APOLOGY);
}

async function apologise(
  session: ConversationSession,
  tts: TextToSpeech,
  idleMs: number,
  log: Logger | undefined,
): Promise<boolean> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new StallError('the apology took too long')), APOLOGY_MS);
  const signal = AbortSignal.any([controller.signal, session.signal]);
  const output = new AudioReply({ session, tts, signal, idleMs, language: APOLOGY_LANGUAGE });
  try {
    output.add(APOLOGY);
    const heard = await Promise.race([output.finish(), abortedPromise(signal).then(() => null)]);
    return heard !== null;
  } catch (failure) {
    log?.warn({ err: failure, tts: tts.name }, 'could not speak the apology');
    return false;
  } finally {
    clearTimeout(timer);
    output.stop();
  }
}
