/**
 * Call states. The spec names ONGOING and COMPLETED; the other final states are the outcomes a
 * telephone network reports (see docs/decisions.md).
 */
export const CALL_STATUSES = ['ONGOING', 'COMPLETED', 'NO_ANSWER', 'BUSY', 'FAILED', 'VOICEMAIL'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export type FinalCallStatus = Exclude<CallStatus, 'ONGOING'>;

/**
 * How the callee is reached: 'phone' (a provider dials a number: the simulator, a SIP trunk) or
 * 'web' (the dashboard's "Talk to this agent": a browser's microphone over a WebSocket).
 */
export const CALL_CHANNELS = ['phone', 'web'] as const;
export type CallChannel = (typeof CALL_CHANNELS)[number];

/** The provider name recorded on web calls (calls.provider) and their dial records. */
export const WEB_PROVIDER = 'web';

export interface TranscriptEntry {
  role: 'assistant' | 'user';
  content: string;
}

export function isFinal(status: CallStatus): status is FinalCallStatus {
  return status !== 'ONGOING';
}

/** Why a call the voice provider refused to place failed: its `error`, and the dial's 502 message. */
export const DIAL_REFUSED_MESSAGE = 'The voice provider could not place the call';

/** The end of a call the voice provider refused to place (a `CallEndedEvent` of the ports). */
export interface FailedDialEnd {
  callId: string;
  status: 'FAILED';
  duration: 0;
  answeredAt: null;
  endedAt: Date;
  error: string;
  transcription: TranscriptEntry[];
  /** Ours: the provider could not place the call (domain/failure.ts). */
  failureSource: 'service';
}

/**
 * The end recorded when the provider refuses a dial: FAILED at once, never answered, nothing
 * charged, a service failure. The one builder of this event (issue 23): a single dial (CallIntake.dial) and a batch
 * dial (the dispatcher) record it alike, and nothing else writes it out.
 */
export function failedDialEnd(callId: string, endedAt: Date): FailedDialEnd {
  return {
    callId,
    status: 'FAILED',
    duration: 0,
    answeredAt: null,
    endedAt,
    error: DIAL_REFUSED_MESSAGE,
    transcription: [],
    failureSource: 'service',
  };
}

/**
 * A call's `attempt` (1 for the first): the how-manieth dial of one intent it is, after
 * `earlierDials` earlier dials of that intent. An intent is a contact in one batch (its retries
 * count, up to the batch's `maxAttempts`), or a contact's single dials (a user dialing again is
 * trying again); neither counts the other's dials. The simulator reads it for its scripted
 * outcomes (0006 busy on the first attempt), and a batch's retry rule (`nextStep`) for
 * `maxAttempts`. See docs/decisions.md, "One meaning of attempt".
 */
export function nextAttempt(earlierDials: number): number {
  return earlierDials + 1;
}

/** A call counts as succeeded in statistics only when a person answered and the talk ended normally. */
export function isSuccess(status: CallStatus): boolean {
  return status === 'COMPLETED';
}

export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${String(value)}`);
}

/**
 * Whether an ended call is analysed before its `call.completed` goes out: it has words in its
 * transcript. Its webhook then carries the analysis (the analysis worker queues it).
 */
export function awaitsAnalysis(event: { transcription: Array<{ content: string }> }): boolean {
  return event.transcription.some((entry) => entry.content.trim() !== '');
}
