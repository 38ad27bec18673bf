import type { Logger } from 'pino';

export interface PollLoopOptions {
  name: string;
  /** Pause after a pass that found nothing to do. */
  idleMs: number;
  /** Does one pass; returns how many items it handled (a busy pass is followed at once by the next). */
  tick: () => Promise<number>;
  logger: Logger;
  /** Pause after every pass, busy or not (a pass that plans ahead, like the dispatcher's). */
  alwaysPause?: boolean;
}

/**
 * The shared shape of every worker: poll, work, sleep when idle, back off on errors, and stop
 * cleanly (the current pass finishes; no new one starts).
 */
export class PollLoop {
  private running = false;
  private wake: (() => void) | null = null;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly options: PollLoopOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.done = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.done;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let handled = 0;
      try {
        handled = await this.options.tick();
        failures = 0;
      } catch (error) {
        failures++;
        this.options.logger.error({ err: error, worker: this.options.name }, 'worker pass failed');
      }
      if (!this.running) break;
      if (handled > 0 && failures === 0 && !this.options.alwaysPause) continue;
      // Up to 30 s between passes while a dependency keeps failing, so a database outage is not hammered.
      const pause =
        failures > 0 ? Math.min(this.options.idleMs * 2 ** failures, 30_000) : this.options.idleMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pause);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }
}
