import { rm } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { RecordedFile, WebCallSocket } from '../../ports.js';
import type { CallTransport, PlayResult } from '../../voice/contracts.js';
import { WavRecorder } from './rtp.js';

/**
 * A browser on the line (the dashboard's "Talk to this agent", docs/agents.md §10): the audio
 * transport of a web call, over a WebSocket. Both ways, binary messages are 8 kHz 16-bit
 * little-endian mono PCM; the agent's speech leaves in 20 ms frames (320 bytes) on a 20 ms clock,
 * as RTP would carry it, so a browser plays it as it comes and barge-in cuts it within a frame.
 * What the browser sends is handed to the session one 20 ms frame per tick, silence filling the
 * gaps (the contract of CallTransport). Text messages are JSON control messages; anything else
 * closes the connection with the reason, which ends the call as the callee's hang-up.
 */

// Declared in ports.ts, where the HTTP layer's WebCalls port names it too.
export type { WebCallSocket };

export interface WebTransportOptions {
  socket: WebCallSocket;
  logger?: Logger;
  callId?: string;
}

const FRAME_SAMPLES = 160;
const FRAME_MS = 20;
const SAMPLES_PER_MS = FRAME_SAMPLES / FRAME_MS;
/**
 * Audio received ahead of the clock is held up to 5 s (250 frames, 80 KB); a client sending faster
 * than real time loses what is older. A browser sends in real time and holds one or two frames here.
 */
const MAX_HELD_FRAMES = 250;
/** A stalled event loop catches up at most this many ticks at once (the rest are skipped). */
const MAX_CATCH_UP_TICKS = 10;
const OPEN = 1;
/** WebSocket close codes (RFC 6455 7.4.1): the data is not what the protocol says. */
export const CLOSE_INVALID_DATA = 1007;
export const CLOSE_POLICY = 1008;

/** The control messages a client may send as text. */
type ClientMessage = { type: 'hangup' };

interface Queued {
  pcm: Int16Array;
  offset: number;
  resolve: (result: PlayResult) => void;
  onFirstPacket: ((sentAt: number) => void) | undefined;
}

export class WebCallTransport implements CallTransport {
  readonly media = 'audio' as const;
  private readonly gone = new AbortController();
  readonly signal: AbortSignal = this.gone.signal;
  private readonly listeners = new Set<(frame: Int16Array, receivedAt: number) => void>();
  private readonly speech: Queued[] = [];
  private readonly held: Int16Array[] = [];
  /** Samples of a message that did not fill a whole frame, waiting for the next message. */
  private partial = new Int16Array(FRAME_SAMPLES);
  private partialLength = 0;
  private readonly outFrame = new Int16Array(FRAME_SAMPLES);
  private readonly silence = new Int16Array(FRAME_SAMPLES);
  private timer: NodeJS.Timeout | null = null;
  private startMs = 0;
  private ticks = 0;
  private stopped = false;
  private finishing: Promise<RecordedFile | null> | null = null;

  private recorder: WavRecorder | null = null;
  private recordPath: string | null = null;

  /**
   * Listens to the socket and starts the 20 ms clock at once, so nothing the client sends after
   * this is missed (a hang-up, a malformed message).
   */
  constructor(private readonly options: WebTransportOptions) {
    options.socket.on('message', this.onMessage);
    options.socket.on('close', this.onClose);
    // Gone while the call was being opened: the call ends at once, as the callee's hang-up.
    if (options.socket.readyState !== OPEN) this.gone.abort();
    this.startMs = performance.now();
    this.schedule();
  }

  /** Records both directions from now on (stereo WAV: left the agent, right the browser). */
  async record(path: string, maxSeconds: number): Promise<void> {
    const recorder = await WavRecorder.create(path, maxSeconds, (error) =>
      this.options.logger?.warn({ err: error, callId: this.options.callId }, 'the web call recording failed'),
    );
    if (this.finishing) {
      // The call ended while the file was being opened: nothing is recorded.
      await recorder.close();
      await rm(path, { force: true });
      return;
    }
    this.recorder = recorder;
    this.recordPath = path;
  }

  onAudio(listener: (frame: Int16Array, receivedAt: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Queues speech after what is queued; resolves when its last frame was sent or it was dropped. */
  play(pcm: Int16Array, onFirstPacket?: (sentAt: number) => void): Promise<PlayResult> {
    if (this.stopped) return Promise.resolve({ playedMs: 0, interrupted: true });
    if (pcm.length === 0) return Promise.resolve({ playedMs: 0, interrupted: false });
    return new Promise((resolve) => this.speech.push({ pcm, offset: 0, resolve, onFirstPacket }));
  }

  stopPlayback(): void {
    for (const item of this.speech.splice(0))
      item.resolve({ playedMs: item.offset / SAMPLES_PER_MS, interrupted: true });
  }

  /** Audio only. */
  sayText(): void {}

  onText(): () => void {
    return () => {};
  }

  /** A browser has no keypad tones to hear. */
  async sendDtmf(): Promise<boolean> {
    return false;
  }

  async transfer(): Promise<{ ok: false; reason: string }> {
    return {
      ok: false,
      reason: 'a web call cannot be transferred: the caller is a browser, not a phone line',
    };
  }

  /** Stops the clock and the speech; the connection is closed by the owner once the end is stored. */
  hangup(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stopPlayback();
    this.options.socket.off('message', this.onMessage);
  }

  /** Ends the media and hands over the recording. */
  finish(): Promise<RecordedFile | null> {
    this.finishing ??= (async () => {
      this.hangup();
      if (!this.recorder || !this.recordPath) return null;
      await this.recorder.close();
      return { path: this.recordPath, contentType: 'audio/wav' };
    })();
    return this.finishing;
  }

  /** Closes the connection with a reason the client is shown; the call ends as its hang-up. */
  refuse(code: number, reason: string): void {
    this.options.logger?.info({ callId: this.options.callId, code, reason }, 'closed a web call connection');
    if (this.options.socket.readyState === OPEN) this.options.socket.close(code, reason);
    this.gone.abort();
  }

  private readonly onClose = (): void => {
    this.options.socket.off('close', this.onClose);
    this.gone.abort();
  };

  private readonly onMessage = (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void => {
    const bytes = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data);
    if (!isBinary) {
      this.control(bytes.toString('utf8'));
      return;
    }
    if (bytes.length % 2 !== 0) {
      this.refuse(
        CLOSE_INVALID_DATA,
        'audio is 16-bit samples: a binary message must have an even number of bytes',
      );
      return;
    }
    for (let at = 0; at < bytes.length; at += 2) {
      this.partial[this.partialLength++] = bytes.readInt16LE(at);
      if (this.partialLength === FRAME_SAMPLES) {
        this.held.push(this.partial);
        this.partial = new Int16Array(FRAME_SAMPLES);
        this.partialLength = 0;
      }
    }
    if (this.held.length > MAX_HELD_FRAMES) this.held.splice(0, this.held.length - MAX_HELD_FRAMES);
  };

  private control(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.refuse(CLOSE_INVALID_DATA, 'a text message must be JSON, such as {"type":"hangup"}');
      return;
    }
    if (isClientMessage(message)) {
      // The only control message: the caller hangs up (the same as closing the connection).
      this.gone.abort();
      return;
    }
    this.refuse(CLOSE_POLICY, 'unknown message: the only text message a client sends is {"type":"hangup"}');
  }

  /** Arms the next tick at start + n * 20 ms, so lateness never accumulates. */
  private schedule(): void {
    const due = this.startMs + this.ticks * FRAME_MS;
    this.timer = setTimeout(this.onTimer, Math.max(0, due - performance.now()));
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    if (this.stopped) return;
    let due = Math.floor((performance.now() - this.startMs) / FRAME_MS) + 1 - this.ticks;
    // After a long stall the skipped time is dropped rather than sent in a burst.
    if (due > MAX_CATCH_UP_TICKS) {
      this.ticks += due - MAX_CATCH_UP_TICKS;
      due = MAX_CATCH_UP_TICKS;
    }
    for (; due > 0 && !this.stopped; due--) this.tick();
    if (!this.stopped) this.schedule();
  };

  /** One 20 ms step: a frame of the agent's speech out (if any), a frame of the browser's in. */
  private tick(): void {
    this.ticks++;
    const speaking = this.takeSpeech();
    if (speaking && this.options.socket.readyState === OPEN) {
      // A copy: the socket may hold the buffer until it is written, and outFrame is reused. The
      // samples go in the host's byte order, little-endian on every platform Node ships for.
      this.options.socket.send(Buffer.from(this.outFrame.slice().buffer));
    }
    const heard = this.held.shift() ?? this.silence;
    const at = performance.timeOrigin + performance.now();
    for (const listener of [...this.listeners]) {
      try {
        listener(heard === this.silence ? new Int16Array(FRAME_SAMPLES) : heard, at);
      } catch (error) {
        this.options.logger?.warn({ err: error, callId: this.options.callId }, 'an audio listener failed');
      }
    }
    this.recorder?.write(this.outFrame, heard);
  }

  /** Fills outFrame from the queued speech (silence after it); false when nothing was queued. */
  private takeSpeech(): boolean {
    const frame = this.outFrame;
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.speech.length > 0) {
      const item = this.speech[0] as Queued;
      if (item.offset === 0 && item.onFirstPacket) {
        const first = item.onFirstPacket;
        item.onFirstPacket = undefined;
        try {
          first(performance.timeOrigin + performance.now());
        } catch {
          // The listener's failure is its own; the speech goes on.
        }
      }
      const count = Math.min(FRAME_SAMPLES - filled, item.pcm.length - item.offset);
      frame.set(item.pcm.subarray(item.offset, item.offset + count), filled);
      filled += count;
      item.offset += count;
      if (item.offset >= item.pcm.length) {
        this.speech.shift();
        item.resolve({ playedMs: item.pcm.length / SAMPLES_PER_MS, interrupted: false });
      }
    }
    frame.fill(0, filled);
    return filled > 0;
  }
}

function isClientMessage(value: unknown): value is ClientMessage {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'hangup';
}
