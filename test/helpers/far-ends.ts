/**
 * Far ends for conversation tests, the callee's side of a call as a transport carries it (what sipp
 * is to the SIP tests): a text far end, whose callee reads the agent's lines and answers in text
 * like the simulator's, and an audio far end that carries 8 kHz audio both ways in real time
 * (20 ms frames), speaks espeak-ng speech as the callee, and records what the agent played.
 */
import { synthesize } from '../../src/adapters/speech/espeak.js';
import type { CallTransport, PlayResult } from '../../src/voice/contracts.js';

const FRAME = 160;
const FRAME_MS = 20;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type TransferAnswer = { ok: true } | { ok: false; reason: string };

/** What both far ends share: DTMF and transfers as the far end saw them, and the hang-up. */
abstract class FarEnd {
  readonly dtmf: string[] = [];
  readonly transfers: string[] = [];
  /** How the far end answers a REFER (default: accepted). */
  transferAnswer: (to: string) => TransferAnswer = () => ({ ok: true });
  /** False: the far end did not negotiate telephone-events. */
  takesDtmf = true;
  /** Who hung up first, once the call is over. */
  hungUpBy: 'agent' | 'callee' | null = null;
  protected readonly controller = new AbortController();
  readonly signal = this.controller.signal;

  async sendDtmf(digits: string): Promise<boolean> {
    if (!this.takesDtmf) return false;
    this.dtmf.push(digits);
    return true;
  }

  async transfer(to: string): Promise<TransferAnswer> {
    this.transfers.push(to);
    await sleep(20);
    return this.transferAnswer(to);
  }

  hangup(): void {
    if (this.hungUpBy === null) this.hungUpBy = 'agent';
    this.stop();
  }

  /** The callee hangs up (BYE from the far end). */
  calleeHangsUp(): void {
    if (this.hungUpBy === null) this.hungUpBy = 'callee';
    this.stop();
  }

  protected stop(): void {
    this.controller.abort();
  }
}

/**
 * The simulator's kind of call: the callee reads each agent line and `answer` gives its reply
 * (after `delayMs`), or nothing to stay silent.
 */
export class TextFarEnd extends FarEnd implements CallTransport {
  readonly media = 'text' as const;
  readonly agentLines: string[] = [];
  answer: (line: string, index: number) => string | null | undefined = () => null;
  delayMs = 30;
  private readonly listeners = new Set<(text: string) => void>();

  onAudio(): () => void {
    return () => {};
  }

  async play(): Promise<PlayResult> {
    return { playedMs: 0, interrupted: false };
  }

  stopPlayback(): void {}

  sayText(text: string): void {
    if (this.signal.aborted) return;
    const index = this.agentLines.push(text) - 1;
    const reply = this.answer(text, index);
    if (reply) setTimeout(() => this.say(reply), this.delayMs);
  }

  onText(listener: (text: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The callee says a line now. */
  say(text: string): void {
    if (this.signal.aborted) return;
    for (const listener of this.listeners) listener(text);
  }
}

interface Outgoing {
  pcm: Int16Array;
  sent: number;
  onFirstPacket: ((sentAt: number) => void) | undefined;
  resolve: (result: PlayResult) => void;
}

/** A stretch of the agent's audio on the wire, between silences. */
export interface AgentSpeech {
  startedAt: number;
  endedAt: number | null;
  samples: number;
}

/**
 * An audio call's far end in real time: every 20 ms one frame goes each way. The callee's frames
 * are silence, or the speech `say` queued; the agent's played audio is taken 160 samples a tick
 * from its queue, as RTP would send it.
 */
export class AudioFarEnd extends FarEnd implements CallTransport {
  readonly media = 'audio' as const;
  /** Every frame the agent sent, in order (silence between its lines is not sent). */
  readonly agentFrames: Array<{ at: number; frame: Int16Array }> = [];
  readonly agentSpeech: AgentSpeech[] = [];
  /** The callee's utterances: text, when they started and ended on the wire. */
  readonly calleeSpeech: Array<{ text: string; startedAt: number; endedAt: number | null }> = [];
  /** When the agent's queued audio was dropped (barge-in). */
  readonly playbackStops: number[] = [];
  private readonly listeners = new Set<(frame: Int16Array, receivedAt: number) => void>();
  private readonly outgoing: Outgoing[] = [];
  private readonly speech: Array<{ pcm: Int16Array; voiced: number; text: string; done: () => void }> = [];
  private speechAt = 0;
  private readonly startedAt = Date.now();
  private ticks = 0;
  private readonly timer: NodeJS.Timeout;
  private lastAgentFrameAt = 0;

  constructor() {
    super();
    this.timer = setInterval(() => this.tick(), FRAME_MS / 2);
  }

  onAudio(listener: (frame: Int16Array, receivedAt: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  play(pcm: Int16Array, onFirstPacket?: (sentAt: number) => void): Promise<PlayResult> {
    if (this.signal.aborted || pcm.length === 0)
      return Promise.resolve({ playedMs: 0, interrupted: this.signal.aborted });
    return new Promise((resolve) => this.outgoing.push({ pcm, sent: 0, onFirstPacket, resolve }));
  }

  stopPlayback(): void {
    if (this.outgoing.length > 0) this.playbackStops.push(Date.now());
    for (const item of this.outgoing.splice(0)) {
      item.resolve({ playedMs: item.sent / 8, interrupted: true });
    }
  }

  sayText(): void {}

  onText(): () => void {
    return () => {};
  }

  /** The callee says `text` (espeak-ng); resolves when its last frame went out. */
  async say(text: string): Promise<void> {
    const pcm = await synthesize(text, { voice: 'en-us' });
    if (this.signal.aborted) return;
    const voiced = voicedLength(pcm);
    await new Promise<void>((resolve) => this.speech.push({ pcm, voiced, text, done: resolve }));
  }

  /**
   * What a speech-to-text model makes of the audio it is sent now: the words of the callee's
   * latest utterance, as many as have been spoken (a quick look at the start of an utterance gets
   * its first words; a whole utterance gets all of them). The words are spread over the voiced
   * part: espeak-ng ends a line with about 350 ms of silence, and a model that has had the last
   * sound has had every word, whether the silence after it has gone out yet or not.
   */
  heardSoFar(): string {
    const last = this.calleeSpeech.at(-1);
    if (!last) return '';
    const words = last.text.split(/\s+/).filter(Boolean);
    const current = this.speech[0];
    if (last.endedAt !== null || !current) return words.join(' ');
    return words.slice(0, Math.floor(words.length * Math.min(1, this.speechAt / current.voiced))).join(' ');
  }

  /** The agent is talking now (a frame went out in the last 100 ms). */
  agentTalking(): boolean {
    return Date.now() - this.lastAgentFrameAt < 100;
  }

  /**
   * Waits for the agent's line: the one it is saying now, or else the next one, until it has been
   * quiet for `quietMs` after it (short gaps between its sentences are part of the line).
   */
  async agentLine(options: { quietMs?: number; timeoutMs?: number } = {}): Promise<void> {
    const quietMs = options.quietMs ?? 1000;
    const last = this.agentSpeech.at(-1);
    const line =
      last && (last.endedAt === null || Date.now() - last.endedAt < quietMs)
        ? this.agentSpeech.length - 1
        : this.agentSpeech.length;
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    while (Date.now() < deadline && !this.signal.aborted) {
      const latest = this.agentSpeech.at(-1);
      if (this.agentSpeech.length > line && latest?.endedAt != null && Date.now() - latest.endedAt >= quietMs)
        return;
      await sleep(FRAME_MS);
    }
    if (!this.signal.aborted) throw new Error('the agent said nothing in time');
  }

  /** The callee answers each agent line with the next of `lines`, once the agent went quiet. */
  async answerLines(lines: string[]): Promise<void> {
    for (const line of lines) {
      await this.agentLine();
      if (this.signal.aborted) return;
      await this.say(line);
    }
  }

  /** Waits until the agent's audio starts. */
  async agentStarts(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !this.signal.aborted) {
      if (this.agentTalking()) return;
      await sleep(FRAME_MS / 2);
    }
    if (!this.signal.aborted) throw new Error('the agent did not start talking in time');
  }

  protected override stop(): void {
    clearInterval(this.timer);
    this.stopPlayback();
    for (const item of this.speech.splice(0)) item.done();
    super.stop();
  }

  /** Sends every frame that is due by now (a late timer catches up, as a jitter buffer would). */
  private tick(): void {
    const due = Math.floor((Date.now() - this.startedAt) / FRAME_MS);
    while (this.ticks < due && !this.signal.aborted) {
      this.ticks++;
      const at = this.startedAt + this.ticks * FRAME_MS;
      this.sendCallee(at);
      this.sendAgent(at);
    }
  }

  private sendCallee(at: number): void {
    const frame = new Int16Array(FRAME);
    const current = this.speech[0];
    if (current) {
      if (this.speechAt === 0) this.calleeSpeech.push({ text: current.text, startedAt: at, endedAt: null });
      frame.set(current.pcm.subarray(this.speechAt, this.speechAt + FRAME));
      this.speechAt += FRAME;
      if (this.speechAt >= current.pcm.length) {
        this.speech.shift();
        this.speechAt = 0;
        const last = this.calleeSpeech.at(-1);
        if (last) last.endedAt = at;
        current.done();
      }
    }
    for (const listener of this.listeners) listener(frame, at);
  }

  private sendAgent(at: number): void {
    let frame: Int16Array | null = null;
    let filled = 0;
    while (filled < FRAME) {
      const head = this.outgoing[0];
      if (!head) break;
      frame ??= new Int16Array(FRAME);
      if (head.sent === 0) head.onFirstPacket?.(at);
      const take = Math.min(FRAME - filled, head.pcm.length - head.sent);
      frame.set(head.pcm.subarray(head.sent, head.sent + take), filled);
      head.sent += take;
      filled += take;
      if (head.sent >= head.pcm.length) {
        this.outgoing.shift();
        head.resolve({ playedMs: head.pcm.length / 8, interrupted: false });
      }
    }
    const last = this.agentSpeech.at(-1);
    if (frame) {
      this.agentFrames.push({ at, frame });
      if (!last || last.endedAt !== null)
        this.agentSpeech.push({ startedAt: at, endedAt: null, samples: FRAME });
      else last.samples += FRAME;
      this.lastAgentFrameAt = Date.now();
    } else if (last && last.endedAt === null) {
      last.endedAt = at;
    }
  }
}

/** Samples up to and including the last one louder than the quiet at the end of a line. */
function voicedLength(pcm: Int16Array): number {
  let end = pcm.length;
  while (end > 1 && Math.abs(pcm[end - 1] ?? 0) < 300) end--;
  return end;
}
