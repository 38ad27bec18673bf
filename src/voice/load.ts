import type { Logger } from 'pino';
import type { LoadGauge } from '../ports.js';

/**
 * This process's load: the AI calls it holds and how late its event loop runs, each against its
 * bound. One per runtime, built with the voice side (wiring/voice.ts); the answered-call session
 * (`runAnsweredCall`, the one place every transport's answered call passes) counts the calls,
 * and the dispatcher reads it before each claim (docs/decisions.md, "Worker overload").
 */

/**
 * The lag is the event loop's delay at p99 over windows of this length. 2 s at a 10 ms resolution
 * is some 200 samples: a p99 that one long pause (a sweep, a GC) moves, but only for one window,
 * so the dispatcher stops claiming for about 2 s, not for a blip it would never see at once.
 */
export const LAG_WINDOW_MS = 2000;
const RESOLUTION_MS = 10;

export interface ProcessLoadOptions {
  /** OUTDIAL_MAX_AI_CALLS. */
  maxAiCalls: number;
  /** OUTDIAL_MAX_EVENT_LOOP_LAG_MS. */
  maxLagMs: number;
  logger?: Logger;
  /** The window's length (tests shorten it). */
  windowMs?: number;
  /** Reads the lag of the window that just ended, in ms (tests give their own); default the ticks' p99. */
  measure?: () => number;
}

type State = 'ok' | 'full' | 'lagging';

export class ProcessLoad implements LoadGauge {
  readonly maxAiCalls: number;
  readonly maxLagMs: number;
  private readonly calls = new Set<string>();
  /** Calls placed here whose agent the engine holds, not answered yet: each takes a place already. */
  private readonly ringing = new Set<string>();
  /** The loop's own tick every RESOLUTION_MS: how late each came is the lag it saw. */
  private readonly ticker: NodeJS.Timeout | null;
  private readonly timer: NodeJS.Timeout | null;
  private readonly measure: () => number;
  private lag = 0;
  private state: State = 'ok';

  constructor(private readonly options: ProcessLoadOptions) {
    this.maxAiCalls = options.maxAiCalls;
    this.maxLagMs = options.maxLagMs;
    if (options.measure) {
      this.ticker = null;
      this.measure = options.measure;
    } else {
      // Our own tick, not perf_hooks' histogram: reading that one in windows needs its reset(),
      // which restarts its clock, so a delay not yet recorded when the window ends (its timer is
      // due at the same moment as ours after a blocked loop) was lost about half the time.
      const lateness: number[] = [];
      let last = performance.now();
      this.ticker = setInterval(() => {
        const now = performance.now();
        lateness.push(Math.max(now - last - RESOLUTION_MS, 0));
        last = now;
      }, RESOLUTION_MS);
      this.ticker.unref();
      this.measure = () => {
        if (lateness.length === 0) return 0;
        const sorted = lateness.splice(0).sort((a, b) => a - b);
        return sorted[Math.min(Math.ceil(sorted.length * 0.99), sorted.length) - 1] ?? 0;
      };
    }
    // Read in the check phase, after the timers phase: a tick due at the same moment as the window's
    // end (after a blocked loop, both are) is counted in the window it belongs to.
    this.timer = setInterval(() => setImmediate(() => this.sample()), options.windowMs ?? LAG_WINDOW_MS);
    this.timer.unref();
  }

  get aiCalls(): number {
    return this.calls.size;
  }

  /** The last window's event-loop lag (p99), in ms. */
  get lagMs(): number {
    return this.lag;
  }

  get lagging(): boolean {
    return this.lag > this.maxLagMs;
  }

  /** Past a bound: AI calls at their most, or the event loop lagging. */
  get overloaded(): boolean {
    return this.state !== 'ok';
  }

  holds(callId: string): boolean {
    return this.calls.has(callId);
  }

  /**
   * AI calls this process may still take on: its bound less the AI calls in progress and the calls
   * placed here that will be AI calls once answered (`reserve`). Counting those still ringing keeps
   * two quick takers (a dispatcher pass, two single dials) from both seeing the same free place.
   */
  get aiRoom(): number {
    return Math.max(this.maxAiCalls - this.calls.size - this.ringing.size, 0);
  }

  reserve(callId: string): void {
    if (!this.calls.has(callId)) this.ringing.add(callId);
  }

  release(callId: string): void {
    this.ringing.delete(callId);
  }

  startAiCall(callId: string): { over: boolean; end(): void } {
    // A call that rang here turns its place into an AI call's: it is not counted twice.
    this.ringing.delete(callId);
    const over = this.calls.size >= this.maxAiCalls;
    this.calls.add(callId);
    this.check();
    let ended = false;
    return {
      over,
      end: () => {
        if (ended) return;
        ended = true;
        this.calls.delete(callId);
        this.check();
      },
    };
  }

  /** Ends the window: reads its lag and starts the next (the timer's work; tests call it). */
  sample(): void {
    this.lag = this.measure();
    this.check();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.ticker) clearInterval(this.ticker);
  }

  /** Logs a change of state only (never per call or per pass). */
  private check(): void {
    const next: State = this.lagging ? 'lagging' : this.calls.size >= this.maxAiCalls ? 'full' : 'ok';
    if (next === this.state) return;
    const previous = this.state;
    this.state = next;
    const figures = {
      aiCalls: this.calls.size,
      maxAiCalls: this.maxAiCalls,
      lagMs: Math.round(this.lag),
      maxLagMs: this.maxLagMs,
    };
    const log = this.options.logger;
    if (next === 'lagging')
      log?.warn(figures, 'event loop lagging past its bound: this worker claims no calls');
    else if (next === 'full')
      // At its most AI calls is a full worker, not a fault: each call's end frees a place again.
      log?.debug(figures, 'AI calls at their bound: this worker claims no more AI calls');
    else if (previous === 'lagging') log?.info(figures, 'event loop back under its bound: claiming again');
    else log?.debug(figures, 'AI calls under their bound: claiming again');
  }
}
