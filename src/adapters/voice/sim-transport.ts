import type { Logger } from 'pino';
import type { CallTransport, PlayResult } from '../../voice/contracts.js';
import type { SimulatedCallee } from './sim-persona.js';
import { simulatedOutcome } from './simulator-script.js';

/**
 * A simulated answered call in text (media 'text'): what the agent says (`sayText`) reaches the
 * callee, a persona (sim-persona.ts) or an answering machine, and what the callee says comes back
 * through `onText`. The callee hangs up on its own: after taking its leave (unless the agent hangs
 * up first), and at the call's time limit.
 */
export interface SimTransportOptions {
  /** The person who answered; null: an answering machine took the call. */
  callee: SimulatedCallee | null;
  /**
   * Quiet after the agent's last words before the callee answers (default 300 ms): the agent may
   * speak a reply sentence by sentence, and the callee answers all of it at once.
   */
  thinkMs?: number;
  /** After taking its leave, how long the callee waits for the agent to hang up (default 2 s). */
  leaveGraceMs?: number;
  /** A callee the agent says nothing to says "Hello?" after this (default 3 s). */
  helloAfterMs?: number;
  /** The callee, or the machine, hangs up at this length (default 10 minutes). */
  maxCallMs?: number;
  logger?: Logger;
}

/** Why the far end ended a simulated call (the reason its `signal` is aborted with). */
export type SimHangup = 'callee-hung-up' | 'time-limit' | 'local-hangup';

const DEFAULT_THINK_MS = 300;
const DEFAULT_LEAVE_GRACE_MS = 2000;
const DEFAULT_HELLO_AFTER_MS = 3000;
const DEFAULT_MAX_CALL_MS = 10 * 60_000;

/**
 * A transfer target is a simulated number too: one that is busy (0001), does not answer (0002) or
 * fails (0003) refuses the transfer, as a carrier's NOTIFY would report it; any other accepts.
 */
export function simulatedTransfer(to: string): { ok: true } | { ok: false; reason: string } {
  const outcome = simulatedOutcome(to, 1);
  return outcome.kind === 'unanswered' ? { ok: false, reason: outcome.error } : { ok: true };
}

export class SimulatedTextTransport implements CallTransport {
  readonly media = 'text' as const;
  /** Digits the agent sent, in order (a person on the line hears them and does nothing). */
  readonly dtmf: string[] = [];
  /** Numbers the call was transferred to (accepted transfers only). */
  readonly transfers: string[] = [];
  private readonly controller = new AbortController();
  private readonly listeners = new Set<(text: string) => void>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The agent's words the callee has not answered yet. */
  private pending: string[] = [];
  private thinking: NodeJS.Timeout | null = null;
  /** The callee's reply in progress, aborted when the agent says more before it comes. */
  private replying: AbortController | null = null;
  private spoken = false;
  private leaving = false;
  private readonly thinkMs: number;
  private readonly leaveGraceMs: number;

  constructor(private readonly options: SimTransportOptions) {
    this.thinkMs = options.thinkMs ?? DEFAULT_THINK_MS;
    this.leaveGraceMs = options.leaveGraceMs ?? DEFAULT_LEAVE_GRACE_MS;
    this.after(options.maxCallMs ?? DEFAULT_MAX_CALL_MS, () => this.end('time-limit'));
    const callee = options.callee;
    if (callee) {
      this.after(options.helloAfterMs ?? DEFAULT_HELLO_AFTER_MS, () => {
        if (!this.spoken) this.emit(callee.hello());
      });
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A machine answers the voicemail numbers; a person answers the others. */
  async amd(): Promise<'human' | 'machine'> {
    return this.options.callee ? 'human' : 'machine';
  }

  onAudio(): () => void {
    return () => {};
  }

  /** A text call carries no audio: nothing is played. */
  async play(): Promise<PlayResult> {
    return { playedMs: 0, interrupted: false };
  }

  stopPlayback(): void {}

  sayText(text: string): void {
    const words = text.trim();
    if (this.signal.aborted || words === '') return;
    this.spoken = true;
    const callee = this.options.callee;
    if (!callee) return; // a machine records the message and answers nothing
    this.pending.push(words);
    // More words before the callee answered: it answers them all together.
    this.replying?.abort();
    this.replying = null;
    if (this.thinking) this.forget(this.thinking);
    this.thinking = this.after(this.thinkMs, () => {
      this.thinking = null;
      void this.answer(callee);
    });
  }

  onText(listener: (text: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async sendDtmf(digits: string): Promise<boolean> {
    if (this.signal.aborted) return false;
    this.dtmf.push(digits);
    return true;
  }

  async transfer(to: string): Promise<{ ok: true } | { ok: false; reason: string }> {
    if (this.signal.aborted) return { ok: false, reason: 'The call has ended' };
    const result = simulatedTransfer(to);
    if (result.ok) this.transfers.push(to);
    return result;
  }

  hangup(): void {
    this.end('local-hangup');
  }

  private async answer(callee: SimulatedCallee): Promise<void> {
    const words = this.pending.join(' ');
    this.pending = [];
    const replying = new AbortController();
    this.replying = replying;
    const stop = () => replying.abort();
    this.signal.addEventListener('abort', stop, { once: true });
    try {
      const reply = await callee.reply(words, replying.signal);
      if (replying.signal.aborted) return;
      if (reply.say) this.emit(reply.say);
      if (reply.leaving && !this.leaving) {
        this.leaving = true;
        this.after(this.leaveGraceMs, () => this.end('callee-hung-up'));
      }
    } catch (error) {
      // The persona never throws by design; if it does, the callee hangs up rather than go quiet.
      this.options.logger?.warn({ err: error }, 'the simulated callee failed; it hangs up');
      this.end('callee-hung-up');
    } finally {
      this.signal.removeEventListener('abort', stop);
      if (this.replying === replying) this.replying = null;
    }
  }

  private emit(text: string): void {
    if (this.signal.aborted) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(text);
      } catch (error) {
        this.options.logger?.warn({ err: error }, 'a listener of the simulated callee failed');
      }
    }
  }

  private end(reason: SimHangup): void {
    if (this.signal.aborted) return;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.thinking = null;
    this.replying?.abort();
    this.controller.abort(reason);
  }

  private after(ms: number, run: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  private forget(timer: NodeJS.Timeout): void {
    clearTimeout(timer);
    this.timers.delete(timer);
  }
}
