import type { Logger } from 'pino';
import { billedSeconds } from '../../domain/billing.js';
import { WEB_PROVIDER } from '../../domain/call.js';
import {
  type CallEndedEvent,
  type CallHolder,
  type Clock,
  type DependencyGate,
  type DialRecord,
  type DialRecords,
  type DialRequest,
  type LiveCallChannel,
  type LoadGauge,
  type ProviderCallState,
  type Recording,
  type RecordingStore,
  systemClock,
} from '../../ports.js';
import type { ConversationEngine, VoiceModels } from '../../voice/contracts.js';
import { runAnsweredCall } from '../../voice/session.js';
import { CallHost } from './call-host.js';
import { cutOffAfterAnswer } from './cut-off.js';
import { type WebCallSocket, WebCallTransport } from './web-transport.js';

// Declared in the domain, where the dashboard's web calls name it too.
export { WEB_PROVIDER };

/** WebSocket close codes of a web call (4000-4999 are the application's, RFC 6455 7.4.2). */
export const CLOSE_CALL_ENDED = 1000;
export const CLOSE_SERVER_STOPPING = 1001;

export interface WebProviderOptions {
  engine: ConversationEngine;
  models: VoiceModels;
  /** OUTDIAL_MAX_CALL_SECONDS in ms. */
  maxCallMs: number;
  recordings: RecordingStore;
  records: DialRecords;
  live: LiveCallChannel;
  /** This process's load: each browser call is an AI call (see session.ts). */
  load?: LoadGauge;
  /** The engine's models' breakers: an answered call whose model is known down ends at once (see session.ts). */
  dependencies?: DependencyGate;
  logger?: Logger;
  /** The clock a call's end is read from. */
  clock?: Clock;
}

/** How long a stop waits for the web calls it hung up to store their ends. */
const CLOSE_WAIT_MS = 10_000;

/**
 * Calls from the dashboard's "Talk to this agent": the browser is already on the line when the
 * call row is written (CallIntake.openWebCall), so this provider places nothing. It holds each
 * call in the answered-call session over a WebCallTransport (AMD skipped: a person pressed the
 * button), forwards the call's live events (status, transcript turns, tool calls) to the page on
 * the same WebSocket, and reports the end through the one call-end path every provider uses
 * (onCallEnded: billing, analysis, webhooks). A call whose process died is settled from its dial
 * record as cut off, like an answered SIP call; it is never dialed.
 */
export class WebCallProvider implements CallHolder {
  readonly name = WEB_PROVIDER;
  private readonly host: CallHost;

  constructor(private readonly options: WebProviderOptions) {
    this.host = new CallHost({
      label: 'web',
      records: options.records,
      ...(options.logger ? { logger: options.logger } : {}),
      closeWaitMs: CLOSE_WAIT_MS,
    });
  }

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.host.onCallEnded(handler);
  }

  /** Web calls up in this process. */
  get activeCalls(): number {
    return this.host.size;
  }

  /**
   * Holds one web call on `socket` until it ends, stores its end, tells the page (`ended`) and
   * closes the connection. Resolves with the end; never throws.
   */
  talk(request: DialRequest, answeredAt: Date, socket: WebCallSocket): Promise<CallEndedEvent> {
    // A web call's id is new (CallIntake.openWebCall): it is never held already.
    const stop = this.host.take(request.callId) ?? new AbortController();
    const running = this.hold(request, answeredAt, socket, stop.signal);
    this.host.running(request.callId, running);
    return running.finally(() => this.host.release(request.callId));
  }

  private async hold(
    request: DialRequest,
    answeredAt: Date,
    socket: WebCallSocket,
    stop: AbortSignal,
  ): Promise<CallEndedEvent> {
    const { logger, live } = this.options;
    const callId = request.callId;
    const send = (message: unknown) => {
      if (socket.readyState === 1) socket.send(JSON.stringify(message));
    };
    // Listening before anything else: what the client sends from here on reaches the call.
    const transport = new WebCallTransport({ socket, callId, ...(logger ? { logger } : {}) });
    // The page's live transcript: the call's own events, as the call page's stream shows them.
    const unsubscribe = await live
      .subscribe(callId, (event) => {
        if (event.type !== 'ended') send(event);
      })
      .catch((error: unknown) => {
        logger?.warn({ err: error, callId }, 'the live transcript of a web call is unavailable');
        return null;
      });
    send({ type: 'call', callId, agentId: request.agent.id });
    let ended: CallEndedEvent;
    try {
      await transport
        .record(await this.options.recordings.scratchPath(callId), this.options.maxCallMs / 1000)
        .catch((error: unknown) => logger?.warn({ err: error, callId }, 'a web call is not recorded'));
      const outcome = await runAnsweredCall({
        callId,
        transport,
        agent: request.agent,
        contact: request.contact,
        variables: request.variables ?? {},
        engine: this.options.engine,
        models: this.options.models,
        // A person pressed the button: there is no answering machine to detect.
        amd: false,
        maxCallMs: this.options.maxCallMs,
        recordings: this.options.recordings,
        stop,
        live,
        ...(this.options.load ? { load: this.options.load } : {}),
        ...(this.options.dependencies ? { dependencies: this.options.dependencies } : {}),
        ...(logger ? { logger } : {}),
      });
      const endedAt = (this.options.clock ?? systemClock).now();
      ended = {
        callId,
        answeredAt,
        endedAt,
        duration: billedSeconds(answeredAt, endedAt),
        ...outcome,
      };
    } catch (error) {
      // Only the recording's scratch path can fail before the session (the session never throws).
      logger?.error({ err: error, callId }, 'a web call failed');
      const endedAt = (this.options.clock ?? systemClock).now();
      ended = {
        callId,
        status: 'FAILED',
        answeredAt,
        endedAt,
        duration: billedSeconds(answeredAt, endedAt),
        error: `The call failed after it was answered: ${(error as Error).message}`,
        transcription: [],
        endedReason: 'error',
      };
    }
    await unsubscribe?.().catch(() => undefined);
    await this.host.report(ended);
    send({
      type: 'ended',
      callId,
      status: ended.status,
      endedReason: ended.endedReason ?? null,
      duration: ended.duration,
      error: ended.error,
    });
    if (socket.readyState === 1) {
      socket.close(
        stop.aborted ? CLOSE_SERVER_STOPPING : CLOSE_CALL_ENDED,
        stop.aborted ? 'the server is stopping' : 'the call ended',
      );
    }
    return ended;
  }

  /**
   * A call whose owner is gone: its stored end, or cut off at its owner's last heartbeat (the
   * browser was answered from the start, so the connected time is charged).
   */
  async lookup(request: DialRequest, record: DialRecord): Promise<ProviderCallState> {
    if (this.host.holds(request.callId)) return { known: true, ended: null };
    if (record.ended) return { known: true, ended: record.ended };
    const answeredAt = record.answeredAt ?? record.sentAt ?? record.createdAt;
    return { known: true, ended: cutOffAfterAnswer(request.callId, { ...record, answeredAt }) };
  }

  recording(call: { id: string }): Promise<Recording | null> {
    return this.options.recordings.get(call.id);
  }

  /** Hangs up every web call of this process (as the agent would) and waits for their ends to be stored. */
  close(): Promise<void> {
    return this.host.stopAll();
  }
}
