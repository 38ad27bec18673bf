import type { Logger } from 'pino';
import {
  hostAddress,
  isOperatorHangup,
  type LiveReply,
  NOT_HELD_HERE,
  OPERATOR_HANGUP,
} from '../../domain/live-call.js';
import type { CallEndedEvent, DialRecords, LiveCallChannel } from '../../ports.js';

/** How long a stop waits for the calls it hung up to report their ends, by default. */
const CLOSE_WAIT_MS = 10_000;

interface HeldCall {
  stop: AbortController;
  done: Promise<void>;
  reported: boolean;
}

export { isOperatorHangup };

const NO_SESSION: LiveReply = {
  ok: false,
  outcome: 'refused',
  reason: 'no agent is talking on this call: it can only be hung up',
};

export interface CallHostOptions {
  /** How the transport's calls are named in logs: `SIP`, `web`, `simulated`. */
  label: string;
  /** The shared dial records: an end is kept there before it is reported. */
  records?: DialRecords;
  logger?: Logger;
  /** Where a failure of the end's consumer goes (default: logged as an error). */
  onError?: (error: unknown, event: CallEndedEvent) => void;
  closeWaitMs?: number;
  /**
   * Live call control: the host takes operators' hang-ups for its calls at one address,
   * `hostAddress(owner, label)` (the owner is `records.owner`), from its first call on, so a
   * hang-up reaches the process holding any call, answered by an agent or not. One subscription
   * per host, not one per call.
   */
  live?: LiveCallChannel;
}

/**
 * What every transport does with the calls it holds (the SIP, web and simulated ones): the
 * registry of this process's calls, their stop, the wait for their ends on close, and the report
 * of each end: kept with its dial record first (if this process dies before the call row hears
 * of it, the process that settles the call reads it there), then told to the one consumer, once.
 */
export class CallHost {
  private readonly calls = new Map<string, HeldCall>();
  private handler: ((event: CallEndedEvent) => Promise<void>) | null = null;
  private stopping: Promise<void> | null = null;
  /** The host's hang-up address while it is served (taken at the first call). */
  private serving: Promise<(() => Promise<void>) | null> | null = null;

  constructor(private readonly options: CallHostOptions) {}

  onCallEnded(handler: (event: CallEndedEvent) => Promise<void>): void {
    this.handler = handler;
  }

  /** Calls held in this process. */
  get size(): number {
    return this.calls.size;
  }

  /** True once `stopAll` was asked: no new call is taken. */
  get closing(): boolean {
    return this.stopping !== null;
  }

  holds(callId: string): boolean {
    return this.calls.has(callId);
  }

  /**
   * Takes `callId` into the registry, synchronously, so a second attempt in this process stops
   * here; null when it is held already. The returned controller stops the call (aborted at once
   * when the host is stopping).
   */
  take(callId: string): AbortController | null {
    if (this.calls.has(callId)) return null;
    const stop = new AbortController();
    if (this.stopping) stop.abort();
    this.calls.set(callId, { stop, done: Promise.resolve(), reported: false });
    this.serving ??= this.serve();
    return stop;
  }

  /**
   * An operator's hang-up of a held call: its stop is aborted with OPERATOR_HANGUP (the transport
   * ends it as the operator's: cancelled while it rings, ended once answered), then its end is
   * waited for. False when this process does not hold the call.
   */
  async hangUp(callId: string): Promise<boolean> {
    const call = this.calls.get(callId);
    if (!call) return false;
    if (!call.stop.signal.aborted) call.stop.abort(OPERATOR_HANGUP);
    await call.done;
    return true;
  }

  /**
   * Takes hang-up requests for this host's calls on the live call channel, when there is one:
   * each names its call (`callId`); one this host does not hold is refused as ended.
   */
  private serve(): Promise<(() => Promise<void>) | null> {
    const { live, logger, records, label } = this.options;
    if (!live || !records) return Promise.resolve(null);
    return live
      .serve(hostAddress(records.owner, label), async (command) => {
        if (command.action !== 'hangup' || !command.callId) return NO_SESSION;
        return (await this.hangUp(command.callId))
          ? { ok: true, outcome: 'ended' }
          : { ok: false, outcome: 'refused', reason: NOT_HELD_HERE };
      })
      .catch((error: unknown) => {
        logger?.warn(
          { err: error },
          `hang-ups cannot reach the ${label} calls: the live call channel failed`,
        );
        return null;
      });
  }

  /** Lets the call go from the registry. */
  private forget(callId: string): void {
    this.calls.delete(callId);
  }

  /** The work that holds the call until it ends: what a stop waits for. */
  running(callId: string, done: Promise<unknown>): void {
    const call = this.calls.get(callId);
    if (call) call.done = done.then(() => undefined);
  }

  /** Lets the call go without an end (it never reached the network, or another process has it). */
  release(callId: string): void {
    this.forget(callId);
  }

  /**
   * Reports a call's end: kept with its dial record (unless `keep` is false: an end rebuilt from
   * the number, like the simulator's canned calls), the call let go, then its consumer told. A
   * second report of a call still held is ignored. Never throws.
   */
  async report(event: CallEndedEvent, options: { keep?: boolean } = {}): Promise<void> {
    const { label, logger, records } = this.options;
    const call = this.calls.get(event.callId);
    if (call?.reported) return;
    if (call) call.reported = true;
    if (options.keep !== false) {
      await records?.ended(event).catch((error: unknown) => {
        logger?.warn({ err: error, callId: event.callId }, `could not record a ${label} call end`);
      });
    }
    this.forget(event.callId);
    try {
      await this.handler?.(event);
    } catch (error) {
      if (this.options.onError) this.options.onError(error, event);
      else logger?.error({ err: error, callId: event.callId }, `could not record a ${label} call end`);
    }
  }

  /** Stops every held call and waits for their ends to be reported: at most closeWaitMs, once. */
  stopAll(): Promise<void> {
    this.stopping ??= (async () => {
      const calls = [...this.calls.values()];
      for (const call of calls) call.stop.abort();
      // Hang-ups are quick unless a far end stops answering; a stop never waits on it for long.
      let wait: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(calls.map((call) => call.done)),
        new Promise((resolve) => {
          wait = setTimeout(resolve, this.options.closeWaitMs ?? CLOSE_WAIT_MS);
        }),
      ]);
      clearTimeout(wait);
      const unserve = await this.serving;
      await unserve?.().catch(() => undefined);
    })();
    return this.stopping;
  }
}
