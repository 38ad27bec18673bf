import type { Logger } from 'pino';
import type { EndedReason, ToolCallRecord } from '../domain/agent-call.js';
import type { TranscriptEntry } from '../domain/call.js';
import type { LiveCallEvent, LiveCommand, LiveReply, LiveStatus } from '../domain/live-call.js';
import type { LiveCallChannel } from '../ports.js';

type Numbered<E> = E extends LiveCallEvent ? Omit<E, 'seq'> : never;

/**
 * One answered call's end of the live call channel, held by the session in the process that
 * holds the call: it numbers and publishes the call's events and serves operators' commands while
 * the agent talks with a person. The channel failing (Redis away) never touches the call: events
 * are then lost and commands answered 409 by the API.
 */
export class LiveLink {
  private seq = 0;
  private status: LiveStatus = 'ongoing';
  private stopServing: Promise<(() => Promise<void>) | null> | null = null;
  private closed = false;

  constructor(
    private readonly channel: LiveCallChannel,
    private readonly callId: string,
    private readonly logger?: Logger,
  ) {}

  setStatus(status: LiveStatus, endedReason?: EndedReason): void {
    if (this.status === status) return;
    this.status = status;
    this.publish({ type: 'status', status, ...(endedReason ? { endedReason } : {}) });
  }

  turn(role: TranscriptEntry['role'], content: string): void {
    this.publish({ type: 'turn', role, content });
  }

  toolCall(call: ToolCallRecord): void {
    this.publish({ type: 'tool-call', call });
  }

  /**
   * Takes commands for the call from here on; `in-progress` is published once they can arrive,
   * so a client that saw it may send them.
   */
  serve(
    handler: (command: Exclude<LiveCommand, { action: 'snapshot' }>) => Promise<LiveReply>,
    snapshot: () => { transcription: TranscriptEntry[]; toolCalls: ToolCallRecord[] },
  ): void {
    this.stopServing = this.channel
      .serve(this.callId, async (command) => {
        if (command.action !== 'snapshot') return handler(command);
        // Taken synchronously: the events numbered up to `seq` are exactly what it holds.
        return { ok: true, outcome: 'snapshot', status: this.status, seq: this.seq, ...snapshot() };
      })
      .then(
        (stop) => {
          if (!this.closed) this.setStatus('in-progress');
          return stop;
        },
        (error: unknown) => {
          this.logger?.warn(
            { err: error, callId: this.callId },
            'live call control is unavailable for this call',
          );
          return null;
        },
      );
  }

  /** Stops serving commands (the call is over); events may still be published. */
  async close(): Promise<void> {
    this.closed = true;
    const stop = await this.stopServing;
    await stop?.().catch(() => undefined);
  }

  private publish(event: Numbered<LiveCallEvent>): void {
    this.seq += 1;
    const numbered = { ...event, seq: this.seq } as LiveCallEvent;
    this.channel.publish(this.callId, numbered).catch((error: unknown) => {
      this.logger?.debug({ err: error, callId: this.callId }, 'could not publish a live call event');
    });
  }
}
