import type { Logger } from 'pino';
import { transferTarget } from '../domain/agent-call.js';
import { AppError, fieldError } from '../domain/errors.js';
import {
  HANG_UP_HOSTS,
  hostAddress,
  type LiveCallEvent,
  type LiveCommand,
  type LiveReply,
  type LiveRequestResult,
  NOT_HELD_HERE,
} from '../domain/live-call.js';
import type { CallEndedEvent, LiveCallChannel } from '../ports.js';
import type { CallReads, PersistentCallStatus } from './calls/reads.js';

export interface LiveControlOptions {
  calls: Pick<CallReads, 'persistentStatus'>;
  channel: LiveCallChannel;
  /** The process holding a call (its dial record's owner), for a hang-up no agent session takes. */
  ownerOf?: (callId: string) => Promise<string | null>;
  logger: Logger;
  /** How long hangup, say and a stream's catch-up wait for the host (default 5 s). */
  commandTimeoutMs?: number;
  /**
   * How long a transfer waits for the host (default 35 s): the host itself gives the far end 30 s
   * to answer the REFER and report the target's answer, as the agent's transfer_call tool does.
   */
  transferTimeoutMs?: number;
  /** Between heartbeat comments on an event stream, each followed by a look at the stored call (default 15 s). */
  heartbeatMs?: number;
}

/** What an operator's command came to (the 200 answer). */
export interface LiveActionResult {
  success: boolean;
  callId: string;
  outcome: 'ended' | 'transferred' | 'refused' | 'queued';
  /** Why a transfer was refused (the far end's answer). */
  reason?: string;
}

/** Where an event stream writes (the route's Server-Sent Events response). */
export interface LiveStreamSink {
  /** The stream is accepted: the response starts. Called once, before any event. */
  open(): void;
  event(name: string, data: unknown, id?: number): void;
  comment(text: string): void;
  /** The stream is over (the call ended, or the app closes): the response ends. */
  end(): void;
}

/** The final state a stream ends with: the call as stored. */
function finalState(call: PersistentCallStatus) {
  return {
    callId: call.id,
    status: call.status,
    endedReason: call.endedReason,
    duration: call.duration,
    error: call.error,
    transcription: call.transcription,
    toolCalls: call.toolCalls,
  };
}

const DEFAULT_COMMAND_MS = 5000;
const DEFAULT_TRANSFER_MS = 35_000;
/** 15 s: under the 30-60 s idle timeouts common in proxies and load balancers. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * Live call control for the API (POST /api/v1/call/hangup|transfer|say, GET /api/v1/call/events)
 * and the dashboard: a call of the user is looked up, the command is sent over the live call
 * channel to whichever process holds the call, and its answer returned; an event stream follows
 * the call's events from that process until the call's end is stored.
 */
export class LiveControlService {
  private readonly streams = new Set<() => void>();
  private readonly commandMs: number;
  private readonly transferMs: number;
  private readonly heartbeatMs: number;

  constructor(private readonly options: LiveControlOptions) {
    this.commandMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_MS;
    this.transferMs = options.transferTimeoutMs ?? DEFAULT_TRANSFER_MS;
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  }

  /** Event streams open now (each is one subscription to the channel). */
  get openStreams(): number {
    return this.streams.size;
  }

  /**
   * Ends any ongoing call of the user: the agent's session hangs up a call it holds (as before);
   * any other (ringing, canned, an agent not talking yet) is hung up by the call host of the
   * process holding it, which cancels a ringing call and ends an answered one.
   */
  hangup(userId: string, callId: string): Promise<LiveActionResult> {
    return this.command(userId, callId, { action: 'hangup' }, this.commandMs, { viaHost: true });
  }

  transfer(userId: string, callId: string, to: string): Promise<LiveActionResult> {
    const target = transferTarget(to);
    if (target === null) {
      throw fieldError(
        'to',
        'must be an E.164 number such as +14155550123 or a SIP URI such as sip:desk@pbx.example.com',
      );
    }
    return this.command(userId, callId, { action: 'transfer', to: target }, this.transferMs);
  }

  say(userId: string, callId: string, text: string): Promise<LiveActionResult> {
    const line = text.trim();
    if (line === '') throw fieldError('text', 'must not be empty');
    return this.command(userId, callId, { action: 'say', text: line }, this.commandMs);
  }

  /** Tells the call's followers its end is stored (the call-end handler calls it after the write). */
  async callEnded(event: Pick<CallEndedEvent, 'callId'>): Promise<void> {
    await this.options.channel
      .publish(event.callId, { type: 'ended', callId: event.callId })
      .catch((error: unknown) => {
        this.options.logger.debug({ err: error, callId: event.callId }, 'could not publish a call end');
      });
  }

  /**
   * Follows one call of the user into `sink`: its state now (what the host has said so far, or
   * the stored end), then its events as they come, heartbeats, and its final state once its end
   * is stored. Throws NOT_FOUND before the sink is opened; returns the function that stops
   * following (the client went away).
   */
  async follow(userId: string, callId: string, sink: LiveStreamSink): Promise<() => void> {
    const { channel, calls, logger } = this.options;
    // Buffered until the catch-up is written; `lastSeq` drops what the catch-up already held.
    let pending: LiveCallEvent[] | null = [];
    let lastSeq = 0;
    let over = false;
    let heartbeat: NodeJS.Timeout | undefined;
    let unsubscribe: (() => Promise<void>) | null = null;
    const stop = () => {
      if (over) return;
      over = true;
      this.streams.delete(close);
      clearInterval(heartbeat);
      void unsubscribe?.().catch(() => undefined);
    };
    const close = () => {
      if (over) return;
      stop();
      sink.end();
    };
    const ended = async () => {
      if (over) return;
      try {
        const call = await calls.persistentStatus(userId, callId);
        if (over) return;
        sink.event('ended', finalState(call));
      } catch (error) {
        logger.warn({ err: error, callId }, 'could not read a call that ended');
      }
      close();
    };
    const deliver = (event: LiveCallEvent) => {
      if (over) return;
      if (event.type === 'ended') {
        void ended();
        return;
      }
      if (event.seq <= lastSeq) return;
      lastSeq = event.seq;
      const { type, seq, ...data } = event;
      sink.event(type, { callId, ...data }, seq);
    };
    try {
      unsubscribe = await channel.subscribe(callId, (event) => {
        if (pending) pending.push(event);
        else deliver(event);
      });
    } catch (error) {
      // Without the channel the stream still ends when the stored call does (the heartbeat looks).
      logger.warn({ err: error, callId }, 'live call events are unavailable; the stream shows the end only');
    }
    let call: PersistentCallStatus;
    try {
      // Read after subscribing: an end stored before this read is seen here, one after it arrives.
      call = await calls.persistentStatus(userId, callId);
    } catch (error) {
      over = true;
      await unsubscribe?.().catch(() => undefined);
      throw error;
    }
    this.streams.add(close);
    sink.open();
    if (call.status !== 'ONGOING') {
      sink.event('ended', finalState(call));
      close();
      return stop;
    }
    const snapshot = await channel
      .request(callId, { action: 'snapshot' }, this.commandMs)
      .catch(() => 'not-live' as const);
    if (over) return stop;
    if (typeof snapshot === 'object' && snapshot.outcome === 'snapshot') {
      lastSeq = snapshot.seq;
      sink.event('status', { callId, status: snapshot.status });
      for (const turn of snapshot.transcription) sink.event('turn', { callId, ...turn });
      for (const tool of snapshot.toolCalls) sink.event('tool-call', { callId, call: tool });
    } else {
      sink.event('status', { callId, status: 'ongoing' });
    }
    const buffered = pending;
    pending = null;
    for (const event of buffered) deliver(event);
    heartbeat = setInterval(() => {
      if (over) return;
      sink.comment('heartbeat');
      // An end the channel did not bring (Redis away, a call settled by another process's
      // reconciler) is found in the database.
      calls
        .persistentStatus(userId, callId)
        .then((now) => {
          if (now.status !== 'ONGOING') void ended();
        })
        .catch(() => undefined);
    }, this.heartbeatMs);
    heartbeat.unref();
    return stop;
  }

  /**
   * A hang-up no agent session took goes to the call hosts of the process that holds the call
   * (its dial record's owner), one address per transport; 'not-live' when none holds it.
   */
  private async askHosts(callId: string, timeoutMs: number): Promise<LiveRequestResult> {
    const owner = await this.options.ownerOf?.(callId);
    if (!owner) return 'not-live';
    for (const label of HANG_UP_HOSTS) {
      const reply = await this.options.channel.request(
        hostAddress(owner, label),
        { action: 'hangup', callId },
        timeoutMs,
      );
      if (reply === 'not-live') continue;
      if (reply !== 'timeout' && !reply.ok && reply.reason === NOT_HELD_HERE) continue;
      return reply;
    }
    return 'not-live';
  }

  /** Ends every open stream (the app is closing: a stream would hold its server open). */
  closeStreams(): void {
    for (const close of [...this.streams]) close();
  }

  private async command(
    userId: string,
    callId: string,
    command: Exclude<LiveCommand, { action: 'snapshot' }>,
    timeoutMs: number,
    route: { viaHost?: boolean } = {},
  ): Promise<LiveActionResult> {
    const call = await this.options.calls.persistentStatus(userId, callId);
    if (call.status !== 'ONGOING') {
      throw new AppError(
        'CALL_NOT_LIVE',
        `The call has ended (${call.status}): there is nothing to ${command.action}`,
      );
    }
    let reply: Awaited<ReturnType<LiveCallChannel['request']>>;
    try {
      reply = await this.options.channel.request(callId, command, timeoutMs);
      if (reply === 'not-live' && route.viaHost) reply = await this.askHosts(callId, timeoutMs);
    } catch (error) {
      this.options.logger.warn({ err: error, callId }, 'the live call channel failed');
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        'Live call control is unavailable (Redis is not answering); try again',
      );
    }
    if (reply === 'not-live' && route.viaHost) {
      throw new AppError(
        'CALL_NOT_LIVE',
        'No process holds this call now: it is being placed or it is ending; try again',
      );
    }
    if (reply === 'not-live') {
      throw new AppError(
        'CALL_NOT_LIVE',
        'No agent is talking on this call now: it is not answered yet, it is ending, or it has no AI conversation',
      );
    }
    if (reply === 'timeout') {
      throw new AppError(
        'LIVE_CALL_TIMEOUT',
        `The process holding the call did not answer within ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    return actionResult(callId, reply);
  }
}

function actionResult(callId: string, reply: LiveReply): LiveActionResult {
  switch (reply.outcome) {
    case 'ended':
    case 'transferred':
    case 'queued':
      return { success: true, callId, outcome: reply.outcome };
    case 'refused':
      return { success: false, callId, outcome: 'refused', reason: reply.reason };
    case 'snapshot':
      throw new AppError('INTERNAL', 'the host answered a command with a snapshot');
    default: {
      // Exhaustive; a reply from another process that is none of these is a failure, not a 200.
      const unknown: never = reply;
      throw new AppError('INTERNAL', `the host answered ${JSON.stringify(unknown)}`);
    }
  }
}
