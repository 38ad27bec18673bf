/**
 * Live call control (POST /api/v1/call/hangup|transfer|say, GET /api/v1/call/events): what an
 * API process asks the process holding an answered call, what that host answers, and the events
 * it publishes while the call is up. Types only; the channel that carries them is the
 * LiveCallChannel port (memory in one process, Redis pub/sub across hosts).
 */
import type { EndedReason, ToolCallRecord } from './agent-call.js';
import type { TranscriptEntry } from './call.js';

/** What an operator asks of a live call; `snapshot` is the event stream's own catch-up read. */
export type LiveCommand =
  | { action: 'hangup' /** The call, when the command goes to a process's host address. */; callId?: string }
  | { action: 'transfer'; to: string }
  | { action: 'say'; text: string }
  | { action: 'snapshot' };

/**
 * Where a call stands as its live events tell it: `ongoing` (placed, not answered yet, or a call
 * with no AI session), `answered` (the AMD gate is listening), `in-progress` (the agent is talking
 * with a person: commands are taken), `voicemail` (a machine answered), `ending` (hanging up).
 */
export const LIVE_STATUSES = ['ongoing', 'answered', 'in-progress', 'voicemail', 'ending'] as const;
export type LiveStatus = (typeof LIVE_STATUSES)[number];

/** The host's answer to a command. */
export type LiveReply =
  | { ok: true; outcome: 'ended' | 'transferred' | 'queued' }
  | { ok: false; outcome: 'refused'; reason: string }
  | {
      ok: true;
      outcome: 'snapshot';
      status: LiveStatus;
      /** The number of the last event published before this snapshot was taken. */
      seq: number;
      transcription: TranscriptEntry[];
      toolCalls: ToolCallRecord[];
    };

/** What a command came to: the host's reply, no host holds a live session, or none answered in time. */
export type LiveRequestResult = LiveReply | 'not-live' | 'timeout';

/**
 * The call's end is stored: published by the process that recorded it, after the write, so a
 * follower that reads the call then sees its final state.
 */
export interface LiveEndedEvent {
  type: 'ended';
  callId: string;
}

/**
 * Events of a live call, in the order they happened. `seq` numbers the host's events of one call
 * from 1, so a stream that caught up from a snapshot drops what the snapshot already held.
 */
export type LiveCallEvent =
  | { type: 'status'; seq: number; status: LiveStatus; endedReason?: EndedReason }
  | { type: 'turn'; seq: number; role: TranscriptEntry['role']; content: string }
  | { type: 'tool-call'; seq: number; call: ToolCallRecord }
  | (LiveEndedEvent & { seq?: number });

/**
 * The reason a held call's stop is aborted with when an operator hangs it up, not a process stop:
 * the transport then ends the call as the operator's (`operator-ended`).
 */
export const OPERATOR_HANGUP = 'operator-hangup';

/** True when the call's stop came from an operator's hang-up rather than its process stopping. */
export function isOperatorHangup(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason === OPERATOR_HANGUP;
}

/**
 * Where one transport's call host (`label`: `simulated`, `SIP`) in the process `owner` takes
 * hang-ups for the calls it holds, beside each AI session's own address (the call id), which
 * answers only while an agent talks. LiveControlService asks here, with the call id in the
 * command, when no session answers: a canned simulated call, a call ringing.
 */
export function hostAddress(owner: string, label: string): string {
  return `host:${owner}:${label}`;
}

/** A host's refusal of a hang-up for a call it does not hold: the next transport's host is asked. */
export const NOT_HELD_HERE = 'this transport holds no such call';

/** The transports whose hosts take hang-ups (the web calls' are ended through their session). */
export const HANG_UP_HOSTS = ['simulated', 'SIP'] as const;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A command as it arrives from another process: one of ours, or not (then it is dropped). */
export function isLiveCommand(value: unknown): value is LiveCommand {
  if (!isRecord(value)) return false;
  switch (value.action) {
    case 'hangup':
      return value.callId === undefined || typeof value.callId === 'string';
    case 'snapshot':
      return true;
    case 'transfer':
      return typeof value.to === 'string';
    case 'say':
      return typeof value.text === 'string';
    default:
      return false;
  }
}

/** An event as it arrives from another process: one of ours, or not (then it is dropped). */
export function isLiveCallEvent(value: unknown): value is LiveCallEvent {
  if (!isRecord(value)) return false;
  if (value.type === 'ended') return typeof value.callId === 'string';
  if (typeof value.seq !== 'number' || !Number.isSafeInteger(value.seq) || value.seq < 1) return false;
  switch (value.type) {
    case 'status':
      return (LIVE_STATUSES as readonly unknown[]).includes(value.status);
    case 'turn':
      return (value.role === 'assistant' || value.role === 'user') && typeof value.content === 'string';
    case 'tool-call':
      return isRecord(value.call) && typeof value.call.name === 'string';
    default:
      return false;
  }
}
