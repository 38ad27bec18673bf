import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { EventEmitter } from 'node:events';
import { type FileHandle, open } from 'node:fs/promises';
import { isIP } from 'node:net';
import { endianness } from 'node:os';
import { performance } from 'node:perf_hooks';
import { aLawToLinear, encodeALawInto, encodeMuLawInto, muLawToLinear } from '../../voice/audio/g711.js';
import { wavHeader } from '../../voice/audio/wav.js';
import type { PlayResult } from '../../voice/contracts.js';

/**
 * The media path of an answered SIP call: G.711 audio over RTP (RFC 3550, with the audio profile
 * of RFC 3551: PCMU is payload type 0, PCMA 8, both 8 kHz), 20 ms to a packet.
 *
 * One clock per session drives everything: each 20 ms tick sends one packet (queued speech or
 * silence), plays out one received frame from the jitter buffer, and writes one stereo frame to
 * the recording, so what we said and what we heard stay aligned in the file. There is no RTCP;
 * the reception statistics it would report are kept in `stats`.
 */

const SAMPLE_RATE = 8000;
const FRAME_MS = 20;
/** 20 ms at 8 kHz: RFC 3551's default packetisation for G.711. */
const FRAME_SAMPLES = 160;
const SAMPLES_PER_MS = SAMPLE_RATE / 1000;
const HEADER_BYTES = 12;
const PACKET_BYTES = HEADER_BYTES + FRAME_SAMPLES;
/** After a stall of more than 10 ticks (200 ms), older ticks are skipped rather than sent in a burst. */
const MAX_CATCH_UP_TICKS = 10;
/**
 * dgram may still read a packet's buffer after send() returns (the address lookup is deferred
 * to the next tick, and a full socket queues), so packets rotate through 16 buffers: more than the
 * 10 a catch-up can send at once.
 */
const SEND_BUFFERS = 16;
/** The jitter buffer holds this much beyond its target depth before it gives up and restarts. */
const HEADROOM_MS = 500;
/** Sequence numbers remembered to recognise duplicates: 1024 packets, 20 s at 20 ms. */
const SEEN_WINDOW = 1024;
/** 10 late packets in a row (200 ms of audio) mean the far end's timeline moved back: restart on it. */
const LATE_RUN_RESTART = 10;
/** WAV data is written in 1 s chunks: 8000 stereo frames of 16-bit samples, 32 KB. */
const CHUNK_SAMPLES = SAMPLE_RATE * 2;
/** The RIFF sizes are 32-bit: no more stereo 16-bit frames than fit in 4 GiB after the header. */
const MAX_WAV_FRAMES = Math.floor((0xffffffff - 36) / 4);
const BIG_ENDIAN = endianness() === 'BE';

export type G711PayloadType = 0 | 8;

export interface RtpSessionOptions {
  /** Local address to bind (e.g. '127.0.0.1' or '0.0.0.0'). */
  bindAddress: string;
  /** Inclusive range of ports to try, of which only the even ones are used (RTP's convention, RFC 3550 11); omitted = any free port. */
  portRange?: [number, number];
  /**
   * If set, both directions are recorded to this path as a stereo 16-bit 8 kHz WAV (left: what
   * we sent, right: what we received), streamed to disk while the call runs; the header is
   * finalised on close().
   */
  recordPath?: string;
  /** Longest recording in seconds (default 3600); beyond it, recording stops but the call goes on. */
  maxRecordSeconds?: number;
  /** Jitter buffer depth before playout starts, ms (default 60). */
  jitterMs?: number;
}

export interface RtpStats {
  packetsSent: number;
  /** G.711 packets received, including late and duplicate ones. */
  packetsReceived: number;
  /** Packets whose time has been played out and that have not arrived (one that arrives later moves to packetsLate). */
  packetsLost: number;
  /** Packets that arrived after their time had been played out, and were dropped. */
  packetsLate: number;
  /** RFC 3550 interarrival jitter estimate, ms. */
  jitter: number;
}

export interface RtpSessionEvents {
  /**
   * 160 samples (20 ms) of received audio, in order, each as soon as all of it has arrived; a
   * frame still missing audio when the playout reaches it comes then, with silence for what did
   * not arrive (it never waits longer than the jitter buffer's depth). Before the far end's first
   * packet, a frame of silence every tick. `receivedAt`: the wall-clock ms the frame was complete
   * (its last packet's arrival) or given up on, i.e. when its audio was known here.
   */
  audio: [frame: Int16Array, receivedAt: number];
  /** Writing the recording failed: recording stops, the call goes on. */
  recordError: [error: Error];
}

/** The fields of an RTP packet this session uses; the payload is packet[payloadOffset, payloadOffset + payloadLength). */
export interface RtpHeader {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payloadOffset: number;
  payloadLength: number;
}

/**
 * Reads an RTP header into `into` (reused, so receiving allocates nothing). False when the
 * packet is not RTP version 2 or its CSRC list, header extension or padding run past its end.
 */
export function readRtpHeader(packet: Buffer, into: RtpHeader): boolean {
  if (packet.length < HEADER_BYTES) return false;
  const first = packet.readUInt8(0);
  if (first >> 6 !== 2) return false;
  let offset = HEADER_BYTES + 4 * (first & 0x0f);
  if ((first & 0x10) !== 0) {
    if (offset + 4 > packet.length) return false;
    offset += 4 + 4 * packet.readUInt16BE(offset + 2);
  }
  let end = packet.length;
  if ((first & 0x20) !== 0) {
    // The last octet counts the padding, itself included.
    const padding = packet.readUInt8(end - 1);
    if (padding === 0) return false;
    end -= padding;
  }
  if (offset > end) return false;
  const second = packet.readUInt8(1);
  into.marker = (second & 0x80) !== 0;
  into.payloadType = second & 0x7f;
  into.sequence = packet.readUInt16BE(2);
  into.timestamp = packet.readUInt32BE(4);
  into.ssrc = packet.readUInt32BE(8);
  into.payloadOffset = offset;
  into.payloadLength = end - offset;
  return true;
}

const randomUint32 = () => randomBytes(4).readUInt32BE(0);

/**
 * Received audio placed by RTP timestamp, so that reordered packets land where they belong,
 * packets of any length (ptime 10, 20, 30 ...) fit, and a gap plays as silence. Timestamps and
 * sequence numbers are extended past their 32- and 16-bit wraparounds relative to the first
 * packet of the current source. The ring holds samples from the playout position on; playing
 * a sample zeroes it, so anything not written before its turn comes out as silence.
 */
class JitterBuffer {
  private readonly ring: Int16Array;
  private readonly mask: number;
  /** Extended sequence numbers received, at seq mod SEEN_WINDOW, to drop duplicates. */
  private readonly seen = new Float64Array(SEEN_WINDOW).fill(Number.NaN);
  private hasSource = false;
  private ssrc = 0;
  private firstArrivalMs = 0;
  private playing = false;
  /** Extended timestamp of the next sample to play; before playout, of the earliest sample received. */
  private playhead = 0;
  /** Extended timestamp just past the latest sample received. */
  private horizon = 0;
  private tsRefRaw = 0;
  private tsRefExtended = 0;
  private seqRefRaw = 0;
  private seqRefExtended = 0;
  /** Packets buffered and not yet wholly played: extended sequence number and end timestamp. */
  private readonly pendingSeq: number[] = [];
  private readonly pendingEnd: number[] = [];
  /** Loss accounting for the current source: sequence numbers baseSeq..doneMaxSeq are due, doneCount of them came. */
  private baseSeq = 0;
  private doneMaxSeq = -1;
  private doneCount = 0;
  private lostEarlier = 0;
  private lateRun = 0;
  private previousTransit = Number.NaN;
  /** Interarrival jitter in timestamp units, RFC 3550 6.4.1. */
  private jitterUnits = 0;
  /** Extended timestamp of the next sample the listener hears (it runs ahead of the playout). */
  private heardHead = 0;
  /** Received stretches [start, end) not heard yet, in arrival order: heardAt[i], heardEnd[i]. */
  private readonly heardAt: number[] = [];
  private readonly heardEnd: number[] = [];
  late = 0;

  constructor(private readonly depthMs: number) {
    let size = 1024;
    while (size < (depthMs + HEADROOM_MS) * SAMPLES_PER_MS + FRAME_SAMPLES) size *= 2;
    this.ring = new Int16Array(size);
    this.mask = size - 1;
  }

  get lost(): number {
    return this.lostEarlier + Math.max(0, this.doneMaxSeq - this.baseSeq + 1 - this.doneCount);
  }

  get jitterMs(): number {
    return this.jitterUnits / SAMPLES_PER_MS;
  }

  /** A packet has come from the far end (since the start or the last restart). */
  get started(): boolean {
    return this.hasSource;
  }

  push(header: RtpHeader, packet: Buffer, arrivalMs: number): void {
    if (!this.hasSource || header.ssrc !== this.ssrc) this.restart(header, arrivalMs);
    let timestamp = this.extendTimestamp(header.timestamp);
    let sequence = this.extendSequence(header.sequence);
    this.updateJitter(timestamp, arrivalMs);
    if (this.seen[sequence & (SEEN_WINDOW - 1)] === sequence) return;
    let end = timestamp + header.payloadLength;
    if (this.playing && end <= this.playhead) {
      if (++this.lateRun < LATE_RUN_RESTART) {
        this.late++;
        this.markDone(sequence);
        return;
      }
      this.restart(header, arrivalMs);
      timestamp = this.extendTimestamp(header.timestamp);
      sequence = this.extendSequence(header.sequence);
      end = timestamp + header.payloadLength;
    }
    this.lateRun = 0;
    if (!this.playing && timestamp < this.playhead) this.playhead = timestamp;
    if (Math.max(end, this.horizon) - this.playhead > this.ring.length) {
      // Further ahead than the ring reaches: the far end jumped its timeline; follow it.
      this.restart(header, arrivalMs);
      timestamp = this.extendTimestamp(header.timestamp);
      sequence = this.extendSequence(header.sequence);
      end = timestamp + header.payloadLength;
    }
    const decode = header.payloadType === 0 ? muLawToLinear : aLawToLinear;
    const from = Math.max(timestamp, this.playhead);
    for (let at = from; at < end; at++) {
      this.ring[at & this.mask] = decode(packet.readUInt8(header.payloadOffset + at - timestamp));
    }
    if (end > this.horizon) this.horizon = end;
    this.seen[sequence & (SEEN_WINDOW - 1)] = sequence;
    if (sequence < this.baseSeq) this.baseSeq = sequence;
    this.pendingSeq.push(sequence);
    this.pendingEnd.push(end);
    if (end > this.heardHead) {
      this.heardAt.push(Math.max(from, this.heardHead));
      this.heardEnd.push(end);
    }
  }

  /**
   * The listener's next 20 ms into `frame`, if it is due: every sample of it has arrived, or the
   * playout's tick at `playoutMs` is about to take it (then what came of it, silence for the
   * rest). The listener (voice
   * activity, speech-to-text) needs audio in order, not at an even pace, so it does not wait out
   * the buffer's depth behind packets that came in order: only a gap makes it wait, and no longer
   * than the playout does.
   */
  hear(frame: Int16Array, playoutMs?: number): boolean {
    if (!this.hasSource) return false;
    const end = this.heardHead + FRAME_SAMPLES;
    const playsNow =
      playoutMs !== undefined && (this.playing || playoutMs >= this.firstArrivalMs + this.depthMs);
    const due = playsNow && this.heardHead < this.playhead + FRAME_SAMPLES;
    if (!due && this.heardUntil() < end) return false;
    for (let i = 0; i < FRAME_SAMPLES; i++) frame[i] = this.ring[(this.heardHead + i) & this.mask] ?? 0;
    this.heardHead = end;
    for (let i = this.heardEnd.length - 1; i >= 0; i--) {
      if ((this.heardEnd[i] ?? 0) > end) continue;
      this.heardAt.splice(i, 1);
      this.heardEnd.splice(i, 1);
    }
    return true;
  }

  /** Where the audio received without a gap from the listener's position ends. */
  private heardUntil(): number {
    let until = this.heardHead;
    for (let moved = true; moved; ) {
      moved = false;
      for (let i = 0; i < this.heardAt.length; i++) {
        const end = this.heardEnd[i] ?? 0;
        if ((this.heardAt[i] ?? 0) <= until && end > until) {
          until = end;
          moved = true;
        }
      }
    }
    return until;
  }

  /** Fills `frame` with the next 20 ms to play, or silence until jitterMs after the first packet. */
  pull(frame: Int16Array, nowMs: number): void {
    if (!this.playing) {
      if (!this.hasSource || nowMs < this.firstArrivalMs + this.depthMs) {
        frame.fill(0);
        return;
      }
      this.playing = true;
    }
    for (let i = 0; i < FRAME_SAMPLES; i++) {
      const index = (this.playhead + i) & this.mask;
      frame[i] = this.ring[index] ?? 0;
      this.ring[index] = 0;
    }
    this.playhead += FRAME_SAMPLES;
    for (let i = this.pendingEnd.length - 1; i >= 0; i--) {
      if ((this.pendingEnd[i] ?? 0) > this.playhead) continue;
      this.markDone(this.pendingSeq[i] ?? 0);
      // Swap with the last: order does not matter here.
      this.pendingSeq[i] = this.pendingSeq[this.pendingSeq.length - 1] ?? 0;
      this.pendingEnd[i] = this.pendingEnd[this.pendingEnd.length - 1] ?? 0;
      this.pendingSeq.pop();
      this.pendingEnd.pop();
    }
  }

  private markDone(sequence: number): void {
    this.seen[sequence & (SEEN_WINDOW - 1)] = sequence;
    this.doneCount++;
    if (sequence > this.doneMaxSeq) this.doneMaxSeq = sequence;
    if (sequence < this.baseSeq) this.baseSeq = sequence;
  }

  /** Starts over on this packet: a new source (SSRC), or a timeline the buffer cannot follow. */
  private restart(header: RtpHeader, arrivalMs: number): void {
    if (this.hasSource) {
      this.lostEarlier = this.lost;
      this.ring.fill(0);
      this.seen.fill(Number.NaN);
      this.pendingSeq.length = 0;
      this.pendingEnd.length = 0;
    }
    this.hasSource = true;
    this.ssrc = header.ssrc;
    this.firstArrivalMs = arrivalMs;
    this.playing = false;
    this.tsRefRaw = header.timestamp;
    this.tsRefExtended = 0;
    this.seqRefRaw = header.sequence;
    this.seqRefExtended = 0;
    this.playhead = 0;
    this.horizon = 0;
    this.baseSeq = 0;
    this.doneMaxSeq = -1;
    this.doneCount = 0;
    this.lateRun = 0;
    this.previousTransit = Number.NaN;
    this.heardHead = 0;
    this.heardAt.length = 0;
    this.heardEnd.length = 0;
  }

  /** The timestamp as a distance from the first packet's, across 32-bit wraparound (within 2^31 of the latest). */
  private extendTimestamp(raw: number): number {
    const extended = this.tsRefExtended + ((raw - this.tsRefRaw) | 0);
    if (extended > this.tsRefExtended) {
      this.tsRefExtended = extended;
      this.tsRefRaw = raw;
    }
    return extended;
  }

  private extendSequence(raw: number): number {
    const delta = ((raw - this.seqRefRaw + 0x8000) & 0xffff) - 0x8000;
    const extended = this.seqRefExtended + delta;
    if (extended > this.seqRefExtended) {
      this.seqRefExtended = extended;
      this.seqRefRaw = raw;
    }
    return extended;
  }

  private updateJitter(timestamp: number, arrivalMs: number): void {
    const transit = arrivalMs * SAMPLES_PER_MS - timestamp;
    if (!Number.isNaN(this.previousTransit)) {
      const difference = Math.abs(transit - this.previousTransit);
      this.jitterUnits += (difference - this.jitterUnits) / 16;
    }
    this.previousTransit = transit;
  }
}

interface Chunk {
  bytes: Buffer;
  samples: Int16Array;
}

/**
 * A stereo 16-bit 8 kHz WAV written while the call runs: a 44-byte header with zero sizes, then
 * the samples in 1 s chunks (positional writes, one at a time), and the sizes patched on close.
 */
export class WavRecorder {
  private chunk: Chunk;
  private used = 0;
  private frames = 0;
  private position = 44;
  private written = 0;
  private writes: Promise<void> = Promise.resolve();
  private readonly spare: Chunk[] = [];
  private failed = false;

  private constructor(
    private readonly file: FileHandle,
    private readonly maxFrames: number,
    private readonly onError: (error: Error) => void,
  ) {
    this.chunk = newChunk();
  }

  static async create(
    path: string,
    maxSeconds: number,
    onError: (error: Error) => void,
  ): Promise<WavRecorder> {
    const file = await open(path, 'w');
    try {
      await file.write(wavHeader(0, 2, SAMPLE_RATE), 0, 44, 0);
    } catch (error) {
      await file.close();
      throw error;
    }
    const maxFrames = Math.min(Math.floor(maxSeconds * SAMPLE_RATE), MAX_WAV_FRAMES);
    return new WavRecorder(file, maxFrames, onError);
  }

  write(left: Int16Array, right: Int16Array): void {
    if (this.failed) return;
    const count = Math.min(left.length, this.maxFrames - this.frames);
    if (count <= 0) return;
    const samples = this.chunk.samples;
    for (let i = 0; i < count; i++) {
      samples[this.used++] = left[i] ?? 0;
      samples[this.used++] = right[i] ?? 0;
    }
    this.frames += count;
    if (this.used === CHUNK_SAMPLES || this.frames === this.maxFrames) this.flush();
  }

  private flush(): void {
    if (this.used === 0) return;
    const chunk = this.chunk;
    const length = this.used * 2;
    const at = this.position;
    this.position += length;
    this.used = 0;
    this.chunk = this.spare.pop() ?? newChunk();
    if (BIG_ENDIAN) chunk.bytes.subarray(0, length).swap16();
    this.writes = this.writes.then(async () => {
      if (this.failed) return;
      try {
        await this.file.write(chunk.bytes, 0, length, at);
        this.written += length;
        this.spare.push(chunk);
      } catch (error) {
        this.fail(error);
      }
    });
  }

  async close(): Promise<void> {
    this.flush();
    await this.writes;
    try {
      await this.file.write(wavHeader(this.written, 2, SAMPLE_RATE), 0, 44, 0);
    } catch (error) {
      this.fail(error);
    }
    await this.file.close().catch((error: unknown) => this.fail(error));
  }

  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.onError(error instanceof Error ? error : new Error(String(error)));
  }
}

function newChunk(): Chunk {
  const bytes = Buffer.allocUnsafe(CHUNK_SAMPLES * 2);
  return { bytes, samples: new Int16Array(bytes.buffer, bytes.byteOffset, CHUNK_SAMPLES) };
}

function bind(address: string, port: number): Promise<dgram.Socket> {
  const socket = dgram.createSocket(isIP(address) === 6 ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      try {
        socket.close();
      } catch {
        // Never bound: nothing to close.
      }
      reject(error);
    };
    socket.once('error', onError);
    socket.bind({ address, port, exclusive: true }, () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

async function bindInRange(address: string, [low, high]: [number, number]): Promise<dgram.Socket> {
  const candidates: number[] = [];
  for (let port = low + (low % 2); port <= high; port += 2) candidates.push(port);
  if (candidates.length === 0) throw new Error(`RTP port range ${low}-${high} holds no even port`);
  // Random order, so that sessions opened together do not all contend for the lowest port.
  for (let i = candidates.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    const swap = candidates[i] ?? 0;
    candidates[i] = candidates[j] ?? 0;
    candidates[j] = swap;
  }
  for (const port of candidates) {
    try {
      return await bind(address, port);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
  throw new Error(
    `no free RTP port on ${address} in ${low}-${high}: all ${candidates.length} even ports are in use`,
  );
}

function checkOptions(options: RtpSessionOptions): void {
  if (isIP(options.bindAddress) === 0) {
    throw new Error(`RTP bindAddress must be an IP address, not '${options.bindAddress}'`);
  }
  const range = options.portRange;
  if (range) {
    const [low, high] = range;
    if (!Number.isInteger(low) || !Number.isInteger(high) || low < 1 || high > 65535 || low > high) {
      throw new Error(`RTP portRange must be two ports, low to high, within 1-65535; got ${low}-${high}`);
    }
  }
  const { jitterMs, maxRecordSeconds } = options;
  if (jitterMs !== undefined && !(jitterMs >= 0 && jitterMs <= 2000)) {
    throw new Error(`RTP jitterMs must be within 0-2000; got ${jitterMs}`);
  }
  if (maxRecordSeconds !== undefined && !(maxRecordSeconds >= 0)) {
    throw new Error(`RTP maxRecordSeconds must be zero or more; got ${maxRecordSeconds}`);
  }
}

interface Queued {
  pcm: Int16Array;
  offset: number;
  resolve: (played: PlayResult) => void;
  onFirstPacket: ((sentAt: number) => void) | undefined;
}

/** DTMF digits and their RFC 4733 event codes. */
const DTMF_EVENTS: Record<string, number> = {
  '0': 0,
  '1': 1,
  '2': 2,
  '3': 3,
  '4': 4,
  '5': 5,
  '6': 6,
  '7': 7,
  '8': 8,
  '9': 9,
  '*': 10,
  '#': 11,
  A: 12,
  B: 13,
  C: 14,
  D: 15,
};
/** Each digit is a 100 ms event (5 packets, the duration growing by 20 ms), */
const DTMF_TONE_TICKS = 5;
/** then its end packet three times (RFC 4733 2.5.1.4), */
const DTMF_END_PACKETS = 3;
/** then 100 ms of the ordinary stream before the next digit. */
const DTMF_GAP_TICKS = 5;
/** Event volume: -10 dBm0 (RFC 4733 2.3.4). */
const DTMF_VOLUME = 10;

interface DtmfDigit {
  event: number;
  /** Ticks of this digit sent so far (tone, end packets, gap). */
  tick: number;
  /** The RTP timestamp of the event's first packet, kept by all of its packets. */
  timestamp: number;
  payloadType: number;
  resolve: () => void;
}

/** True when every character of `digits` is a DTMF digit (0-9, *, #, A-D). */
export function isDtmf(digits: string): boolean {
  return digits.length > 0 && [...digits].every((digit) => digit.toUpperCase() in DTMF_EVENTS);
}

interface Remote {
  address: string;
  port: number;
  payloadType: G711PayloadType;
}

/**
 * One call's RTP session: open() binds the port to offer in SDP; setRemote() takes the answer;
 * start() runs the clock. play() queues speech; 'audio' delivers what the far end says.
 */
export class RtpSession extends EventEmitter<RtpSessionEvents> {
  readonly port: number;
  private readonly family: 4 | 6;
  private readonly jitterBuffer: JitterBuffer;
  private remote: Remote | null = null;
  private readonly ssrc = randomUint32();
  private sequence = randomUint32() & 0xffff;
  private timestamp = randomUint32();
  /** Set on the first packet to a new destination: the start of a talkspurt (RFC 3551 4.1). */
  private marker = true;
  private readonly packets: Buffer[] = [];
  private nextPacket = 0;
  private readonly header: RtpHeader = {
    payloadType: 0,
    marker: false,
    sequence: 0,
    timestamp: 0,
    ssrc: 0,
    payloadOffset: 0,
    payloadLength: 0,
  };
  private readonly queue: Queued[] = [];
  private readonly dtmf: DtmfDigit[] = [];
  private readonly sendFrame = new Int16Array(FRAME_SAMPLES);
  private readonly playFrame = new Int16Array(FRAME_SAMPLES);
  private readonly heardFrame = new Int16Array(FRAME_SAMPLES);
  /** The next tick's packet went out already: speech that started on a quiet line (see sendAhead). */
  private sentAhead = false;
  private running = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  private startMs = 0;
  private ticks = 0;
  private timer: NodeJS.Timeout | null = null;
  private packetsSent = 0;
  private packetsReceived = 0;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly recorder: WavRecorder | null,
    jitterMs: number,
  ) {
    super();
    this.port = socket.address().port;
    this.family = socket.address().family === 'IPv6' ? 6 : 4;
    this.jitterBuffer = new JitterBuffer(jitterMs);
    for (let i = 0; i < SEND_BUFFERS; i++) this.packets.push(Buffer.alloc(PACKET_BYTES));
    socket.on('message', this.onMessage);
    // Send failures (an unreachable far end, a full buffer) lose that packet, like the network would.
    socket.on('error', () => {});
  }

  static async open(options: RtpSessionOptions): Promise<RtpSession> {
    checkOptions(options);
    const socket = options.portRange
      ? await bindInRange(options.bindAddress, options.portRange)
      : await bind(options.bindAddress, 0);
    let recorder: WavRecorder | null = null;
    // The session exists only once the file is open; errors after that go to its 'recordError'.
    let session: RtpSession | null = null;
    if (options.recordPath !== undefined) {
      try {
        recorder = await WavRecorder.create(options.recordPath, options.maxRecordSeconds ?? 3600, (error) =>
          session?.emit('recordError', error),
        );
      } catch (error) {
        socket.close();
        throw error;
      }
    }
    session = new RtpSession(socket, recorder, options.jitterMs ?? 60);
    return session;
  }

  /** Where to send, and in which codec (from the SDP answer); packets flow from the next tick. */
  setRemote(address: string, port: number, payloadType: G711PayloadType): void {
    if (isIP(address) !== this.family) {
      throw new Error(`RTP remote must be an IPv${this.family} address like the bound one, not '${address}'`);
    }
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`RTP remote port ${port} is invalid`);
    }
    if (payloadType !== 0 && payloadType !== 8) {
      throw new Error(`RTP payload type ${payloadType} is not G.711 (0 or 8)`);
    }
    const previous = this.remote;
    if (!previous || previous.address !== address || previous.port !== port) this.marker = true;
    this.remote = { address, port, payloadType };
  }

  /** Starts the 20 ms clock; a no-op once started or closed. */
  start(): void {
    if (this.running || this.closed) return;
    this.running = true;
    this.startMs = performance.now();
    this.ticks = 0;
    this.schedule();
  }

  /**
   * Queues 8 kHz 16-bit mono PCM after what is already queued; resolves once its last sample has
   * been sent, or when stopPlayback() or close() drops it, with how much of it went out. The
   * samples are read as they are sent, not copied: leave the array alone until then. Speech
   * waits while there is no remote to send to. `onFirstPacket` is called with the wall-clock ms
   * its first samples were handed to the socket.
   */
  play(pcm: Int16Array, onFirstPacket?: (sentAt: number) => void): Promise<PlayResult> {
    if (this.closed) return Promise.resolve({ playedMs: 0, interrupted: true });
    if (pcm.length === 0 && this.queue.length === 0)
      return Promise.resolve({ playedMs: 0, interrupted: false });
    return new Promise((resolve) => {
      this.queue.push({ pcm, offset: 0, resolve, onFirstPacket });
      if (this.queue.length === 1) this.sendAhead();
    });
  }

  /**
   * Speech queued on a quiet line goes out at once as the next tick's packet (its timestamp and
   * sequence number), instead of waiting up to 20 ms for that tick; the tick then sends nothing.
   * The far end sees that one packet early, which its jitter buffer absorbs; the clock and the
   * timestamps keep their pace, so nothing drifts.
   */
  private sendAhead(): void {
    const remote = this.remote;
    if (!this.running || !remote || this.sentAhead || this.dtmf.length > 0) return;
    // Within a millisecond of its time the tick sends it anyway.
    if (this.startMs + this.ticks * FRAME_MS - performance.now() < 1) return;
    this.takeSpeech();
    this.send(remote);
    this.sentAhead = true;
  }

  /** Drops everything queued (barge-in); the pending play() promises resolve, interrupted. */
  stopPlayback(): void {
    const dropped = this.queue.splice(0);
    for (const item of dropped) item.resolve({ playedMs: item.offset / SAMPLES_PER_MS, interrupted: true });
  }

  /**
   * Sends DTMF digits (0-9, *, #, A-D) as RFC 4733 telephone-events with `payloadType` (the one
   * the far end's SDP answer gave telephone-event/8000): each digit a 100 ms event whose packets
   * keep its first timestamp, the first marked, the duration growing; then its end packet three
   * times and a 100 ms gap. Speech waits meanwhile. Resolves when the last digit's end went out
   * (at once when the session is closed or the digits are not DTMF).
   */
  sendDtmf(digits: string, payloadType: number): Promise<void> {
    if (this.closed || !isDtmf(digits)) return Promise.resolve();
    const all = [...digits.toUpperCase()];
    return new Promise((resolve) => {
      all.forEach((digit, index) => {
        this.dtmf.push({
          event: DTMF_EVENTS[digit] ?? 0,
          tick: 0,
          timestamp: 0,
          payloadType,
          resolve: index === all.length - 1 ? resolve : () => {},
        });
      });
    });
  }

  /** True while queued speech remains. */
  get playing(): boolean {
    return this.queue.length > 0;
  }

  get stats(): RtpStats {
    return {
      packetsSent: this.packetsSent,
      packetsReceived: this.packetsReceived,
      packetsLost: this.jitterBuffer.lost,
      packetsLate: this.jitterBuffer.late,
      jitter: this.jitterBuffer.jitterMs,
    };
  }

  /** Stops the clock, closes the socket and finalises the recording; safe to call again or before start(). */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stopPlayback();
    for (const digit of this.dtmf.splice(0)) digit.resolve();
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
    await this.recorder?.close();
  }

  /** Arms the timer for the next tick, due at start + n * 20 ms so that lateness never accumulates. */
  private schedule(): void {
    const due = this.startMs + this.ticks * FRAME_MS;
    this.timer = setTimeout(this.onTimer, Math.max(0, due - performance.now()));
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    if (!this.running) return;
    // Every tick whose time has come; timers can also fire a little early (their clock is the loop's).
    let due = Math.floor((performance.now() - this.startMs) / FRAME_MS) + 1 - this.ticks;
    for (; due > MAX_CATCH_UP_TICKS; due--) this.tick(false);
    for (; due > 0; due--) this.tick(true);
    this.schedule();
  };

  /**
   * One 20 ms step. A live tick sends and emits; a skipped one (after a long stall) only keeps
   * the timestamps, the playout position and the recording in step with the clock.
   */
  private tick(live: boolean): void {
    const nowMs = this.startMs + this.ticks * FRAME_MS;
    this.ticks++;
    const remote = this.remote;
    if (this.sentAhead) {
      // sendFrame holds what went out ahead, for the recording.
      this.sentAhead = false;
    } else if (live && remote && this.dtmf.length > 0 && this.sendEvent(remote)) {
      this.sendFrame.fill(0);
    } else if (live && remote) {
      this.takeSpeech();
      this.send(remote);
    } else {
      this.sendFrame.fill(0);
    }
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    if (!this.jitterBuffer.started) {
      if (live && this.listenerCount('audio') > 0) {
        this.emit('audio', new Int16Array(FRAME_SAMPLES), performance.timeOrigin + performance.now());
      }
    } else {
      // Frames the playout is about to take reach the listener first, if they have not yet.
      this.hear(nowMs);
    }
    this.jitterBuffer.pull(this.playFrame, nowMs);
    this.recorder?.write(this.sendFrame, this.playFrame);
  }

  /** Gives the listener every received frame that is due (JitterBuffer.hear), stamped now. */
  private hear(playoutMs?: number): void {
    const at = performance.timeOrigin + performance.now();
    while (this.jitterBuffer.hear(this.heardFrame, playoutMs)) {
      if (this.listenerCount('audio') > 0) this.emit('audio', this.heardFrame.slice(), at);
    }
  }

  /**
   * One tick of the digit at the head of the DTMF queue: an event packet, or (in its gap) false,
   * so the tick carries the ordinary stream. The digit leaves the queue after its gap.
   */
  private sendEvent(remote: Remote): boolean {
    const digit = this.dtmf[0];
    if (!digit) return false;
    const tick = digit.tick++;
    if (tick === 0) digit.timestamp = this.timestamp;
    const tone = tick < DTMF_TONE_TICKS;
    if (tone || tick < DTMF_TONE_TICKS + DTMF_END_PACKETS) {
      const duration = Math.min(tick + 1, DTMF_TONE_TICKS) * FRAME_SAMPLES;
      this.sendEventPacket(remote, digit, tick === 0, !tone, duration);
      if (tick === DTMF_TONE_TICKS + DTMF_END_PACKETS - 1) digit.resolve();
      return true;
    }
    if (tick >= DTMF_TONE_TICKS + DTMF_END_PACKETS + DTMF_GAP_TICKS - 1) this.dtmf.shift();
    return false;
  }

  private sendEventPacket(
    remote: Remote,
    digit: DtmfDigit,
    marker: boolean,
    end: boolean,
    duration: number,
  ): void {
    if (this.socket.getSendQueueCount() >= SEND_BUFFERS - MAX_CATCH_UP_TICKS) return;
    const packet = this.packets[this.nextPacket];
    if (!packet) return;
    this.nextPacket = (this.nextPacket + 1) % SEND_BUFFERS;
    packet.writeUInt8(0x80, 0);
    packet.writeUInt8((marker ? 0x80 : 0) | (digit.payloadType & 0x7f), 1);
    packet.writeUInt16BE(this.sequence, 2);
    packet.writeUInt32BE(digit.timestamp, 4);
    packet.writeUInt32BE(this.ssrc, 8);
    packet.writeUInt8(digit.event, HEADER_BYTES);
    packet.writeUInt8((end ? 0x80 : 0) | DTMF_VOLUME, HEADER_BYTES + 1);
    packet.writeUInt16BE(duration, HEADER_BYTES + 2);
    // The packet buffers are audio-sized and reused: only the 4-byte event payload is sent.
    this.socket.send(packet, 0, HEADER_BYTES + 4, remote.port, remote.address);
    this.sequence = (this.sequence + 1) & 0xffff;
    this.packetsSent++;
  }

  /** Fills sendFrame from the queue (silence after it), resolving each clip whose end it takes. */
  private takeSpeech(): void {
    const frame = this.sendFrame;
    let filled = 0;
    while (filled < FRAME_SAMPLES) {
      const item = this.queue[0];
      if (!item) break;
      const take = Math.min(FRAME_SAMPLES - filled, item.pcm.length - item.offset);
      if (item.offset === 0 && item.onFirstPacket) {
        // Handed to the socket in this very tick, right after this loop.
        const first = item.onFirstPacket;
        item.onFirstPacket = undefined;
        try {
          first(performance.timeOrigin + performance.now());
        } catch {
          // A listener's failure is its own; the audio goes on.
        }
      }
      for (let i = 0; i < take; i++) frame[filled + i] = item.pcm[item.offset + i] ?? 0;
      filled += take;
      item.offset += take;
      if (item.offset >= item.pcm.length) {
        this.queue.shift();
        // Its continuation runs after this tick's packet has been handed to the socket.
        item.resolve({ playedMs: item.pcm.length / SAMPLES_PER_MS, interrupted: false });
      }
    }
    frame.fill(0, filled);
  }

  private send(remote: Remote): void {
    // A queue this long means the socket is not draining: this packet is lost rather than a buffer reused early.
    if (this.socket.getSendQueueCount() >= SEND_BUFFERS - MAX_CATCH_UP_TICKS) return;
    const packet = this.packets[this.nextPacket];
    if (!packet) return;
    this.nextPacket = (this.nextPacket + 1) % SEND_BUFFERS;
    packet.writeUInt8(0x80, 0); // version 2, no padding, no extension, no CSRC
    packet.writeUInt8((this.marker ? 0x80 : 0) | remote.payloadType, 1);
    packet.writeUInt16BE(this.sequence, 2);
    packet.writeUInt32BE(this.timestamp, 4);
    packet.writeUInt32BE(this.ssrc, 8);
    if (remote.payloadType === 0) encodeMuLawInto(this.sendFrame, packet, HEADER_BYTES);
    else encodeALawInto(this.sendFrame, packet, HEADER_BYTES);
    this.socket.send(packet, remote.port, remote.address);
    this.marker = false;
    this.sequence = (this.sequence + 1) & 0xffff;
    this.packetsSent++;
  }

  private readonly onMessage = (packet: Buffer): void => {
    if (this.closed) return;
    const header = this.header;
    if (!readRtpHeader(packet, header)) return;
    // Only G.711 audio: telephone-event (101), comfort noise and RTCP on a muxed port are ignored.
    if (header.payloadType !== 0 && header.payloadType !== 8) return;
    if (header.payloadLength === 0) return;
    this.packetsReceived++;
    // Before start() there is no playout clock to place audio against.
    if (!this.running) return;
    this.jitterBuffer.push(header, packet, performance.now());
    this.hear();
  };
}
