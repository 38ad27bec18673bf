import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { RtpSession, type RtpSessionOptions } from '../../src/adapters/voice/rtp.js';
import { toneShare } from '../../src/voice/amd.js';
import { decodeALaw, decodeMuLaw, encodeALaw, encodeMuLaw } from '../../src/voice/audio/g711.js';
import { join, tone } from '../helpers/audio.js';

/** RTP on real UDP sockets over loopback: two sessions talking, a misbehaving relay, raw packets. */

const RATE = 8000;
const FRAME = 160;
const HOST = '127.0.0.1';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const rms = (samples: Int16Array) => Math.sqrt(samples.reduce((sum, s) => sum + s * s, 0) / samples.length);

/** Index of the first frame with any sound in it. */
const firstSound = (frames: Int16Array[]) => frames.findIndex((frame) => frame.some((s) => s !== 0));

/** Samples of `heard` from `at` that differ from `expected`. */
function differences(heard: Int16Array, at: number, expected: Int16Array): number {
  let count = 0;
  for (let i = 0; i < expected.length; i++) if (heard[at + i] !== expected[i]) count++;
  return count;
}

interface RawPacket {
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
  csrcs?: number;
  extensionWords?: number;
  padding?: number;
}

/** An RTP packet built by hand, with optional CSRCs, header extension and padding. */
function rtp(p: RawPacket): Buffer {
  const csrcs = p.csrcs ?? 0;
  const extension = p.extensionWords === undefined ? 0 : 4 + 4 * p.extensionWords;
  const padding = p.padding ?? 0;
  const packet = Buffer.alloc(12 + 4 * csrcs + extension + p.payload.length + padding);
  packet[0] = 0x80 | (padding > 0 ? 0x20 : 0) | (extension > 0 ? 0x10 : 0) | csrcs;
  packet[1] = p.payloadType;
  packet.writeUInt16BE(p.sequence & 0xffff, 2);
  packet.writeUInt32BE(p.timestamp >>> 0, 4);
  packet.writeUInt32BE(p.ssrc, 8);
  let at = 12;
  for (let i = 0; i < csrcs; i++, at += 4) packet.writeUInt32BE(0x1000 + i, at);
  if (extension > 0) {
    packet.writeUInt16BE(0xbede, at);
    packet.writeUInt16BE(p.extensionWords ?? 0, at + 2);
    at += extension;
  }
  packet.set(p.payload, at);
  if (padding > 0) packet[packet.length - 1] = padding;
  return packet;
}

const sessions: RtpSession[] = [];
const sockets: dgram.Socket[] = [];
const directories: string[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
  for (const socket of sockets.splice(0)) socket.close();
  for (const directory of directories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
});

async function session(options: Partial<RtpSessionOptions> = {}): Promise<RtpSession> {
  const opened = await RtpSession.open({ bindAddress: HOST, ...options });
  sessions.push(opened);
  return opened;
}

async function udpSocket(): Promise<{ socket: dgram.Socket; port: number }> {
  const socket = dgram.createSocket('udp4');
  sockets.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, HOST, resolve));
  return { socket, port: socket.address().port };
}

/** Every 'audio' frame the session emits. */
function listen(target: RtpSession): Int16Array[] {
  const frames: Int16Array[] = [];
  target.on('audio', (frame) => frames.push(frame));
  return frames;
}

function tempFile(name: string): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'rtp-test-'));
  directories.push(directory);
  return path.join(directory, name);
}

/**
 * The receiving peer's jitter buffer in the ordering tests (the default is 60 ms): deep enough that
 * a stall of the test process (both peers share its event loop) never turns a packet late.
 */
const DEEP_JITTER_MS = 300;

describe('RTP session between two peers', () => {
  it('carries a tone from A to B in order, sample for sample, and counts the packets', async () => {
    const a = await session();
    // A deep jitter buffer: what is tested is the order and the samples, and a loaded test machine
    // stalls the one event loop both peers share for longer than the default 60 ms.
    const b = await session({ jitterMs: DEEP_JITTER_MS });
    a.setRemote(HOST, b.port, 0);
    b.setRemote(HOST, a.port, 0);
    const frames = listen(b);
    a.start();
    b.start();
    const clip = tone(440, 1000);
    await a.play(clip);
    await sleep(150 + DEEP_JITTER_MS);
    await a.close();
    await sleep(50);

    expect(frames.every((frame) => frame.length === FRAME)).toBe(true);
    const start = firstSound(frames);
    expect(start).toBeGreaterThanOrEqual(0);
    const heard = join(...frames);
    // PCMU both ways is exact: B hears A's tone as G.711 quantised it, every sample in its place.
    expect(differences(heard, start * FRAME, decodeMuLaw(encodeMuLaw(clip)))).toBe(0);
    for (const frame of frames.slice(start, start + 50))
      expect(toneShare(frame, RATE, 440)).toBeGreaterThan(0.9);
    expect(frames.slice(start + 50).every((frame) => frame.every((s) => s === 0))).toBe(true);

    const sent = a.stats.packetsSent;
    expect(sent).toBeGreaterThanOrEqual(55);
    expect(b.stats).toMatchObject({ packetsReceived: sent, packetsLost: 0, packetsLate: 0 });
    expect(b.stats.jitter).toBeLessThan(10);
    expect(b.stats.packetsSent).toBeGreaterThan(0);
  });

  it('puts reordered and delayed packets back in order, and a dropped one is one frame of silence', async () => {
    const a = await session();
    const b = await session({ jitterMs: DEEP_JITTER_MS });
    const relay = await udpSocket();
    a.setRemote(HOST, relay.port, 0);
    // Tone packets by index: pairs swapped (the even one held until the next passes), some held 30 ms, one dropped.
    const swapped = new Set([4, 10, 30, 40]);
    const delayed = new Set([16, 17, 21, 35]);
    const dropped = 25;
    let index = 0;
    let held: Buffer | null = null;
    const forward = (packet: Buffer) => relay.socket.send(packet, b.port, HOST);
    relay.socket.on('message', (packet) => {
      if (packet.subarray(12).every((byte) => byte === 0xff)) return forward(packet);
      const at = index++;
      if (at === dropped) return;
      if (swapped.has(at)) {
        held = packet;
        return;
      }
      if (delayed.has(at)) setTimeout(() => forward(packet), 30);
      else forward(packet);
      if (held) forward(held);
      held = null;
    });
    const frames = listen(b);
    a.start();
    b.start();
    const clip = tone(440, 1000);
    await a.play(clip);
    await sleep(200 + DEEP_JITTER_MS);
    await a.close();
    await sleep(50);

    const start = firstSound(frames);
    const heard = join(...frames);
    const expected = decodeMuLaw(encodeMuLaw(clip));
    expect(index).toBe(50);
    for (let frame = 0; frame < 50; frame++) {
      const at = (start + frame) * FRAME;
      const want =
        frame === dropped ? new Int16Array(FRAME) : expected.subarray(frame * FRAME, (frame + 1) * FRAME);
      expect(differences(heard, at, want), `frame ${frame}`).toBe(0);
    }
    expect(b.stats).toMatchObject({
      packetsLost: 1,
      packetsLate: 0,
      packetsReceived: a.stats.packetsSent - 1,
    });
    expect(b.stats.jitter).toBeGreaterThan(0);
  });

  it('keeps to the clock after the event loop stalls: caught up within 200 ms, skipped beyond', async () => {
    const sink = await udpSocket();
    const arrivals: Array<{ at: number; sequence: number; timestamp: number }> = [];
    sink.socket.on('message', (packet) =>
      arrivals.push({
        at: performance.now(),
        sequence: packet.readUInt16BE(2),
        timestamp: packet.readUInt32BE(4),
      }),
    );
    const file = tempFile('stall.wav');
    const a = await session({ recordPath: file });
    a.setRemote(HOST, sink.port, 0);
    const began = performance.now();
    a.start();
    await sleep(300);
    for (const stallMs of [100, 500]) {
      const until = performance.now() + stallMs;
      while (performance.now() < until) {
        // busy: no timer can fire
      }
      await sleep(300);
    }
    await a.close();
    const ranTicks = (performance.now() - began) / 20;
    await sleep(50);

    const steps = arrivals.slice(1).map((packet, i) => {
      const before = arrivals[i] ?? packet;
      return {
        sequence: (packet.sequence - before.sequence) & 0xffff,
        ticks: ((packet.timestamp - before.timestamp) >>> 0) / FRAME,
        gapMs: packet.at - before.at,
      };
    });
    // Every packet follows the one before, on the 20 ms grid of timestamps.
    expect(
      steps.every((step) => step.sequence === 1 && Number.isInteger(step.ticks) && step.ticks >= 1),
    ).toBe(true);
    // 100 ms late: its 5 ticks go out at once, one after another; none is skipped.
    const burst = steps.findIndex(
      (_, i) => steps.slice(i, i + 4).filter((step) => step.ticks === 1 && step.gapMs < 3).length === 4,
    );
    expect(burst).toBeGreaterThanOrEqual(0);
    // 500 ms late: the newest 10 ticks go out, the 15 before them are skipped (a timestamp jump).
    expect(Math.max(...steps.map((step) => step.ticks - 1))).toBeGreaterThanOrEqual(13);
    // Skipped or not, the timestamps keep to the wall clock: no drift.
    const first = arrivals[0];
    const last = arrivals.at(-1);
    if (!first || !last) throw new Error('nothing arrived');
    const timelineMs = ((last.timestamp - first.timestamp) >>> 0) / 8;
    expect(Math.abs(timelineMs - (last.at - first.at))).toBeLessThan(60);
    // The recording holds every tick, skipped ones too, so it lasts as long as the session ran.
    const recordedTicks = (fs.statSync(file).size - 44) / 4 / FRAME;
    expect(Math.abs(recordedTicks - ranTicks)).toBeLessThan(6);
  });
});

describe('RTP receiving', () => {
  it('ignores telephone-event and malformed packets, and reads CSRCs, extensions and padding', async () => {
    const b = await session();
    const raw = await udpSocket();
    const frames = listen(b);
    b.start();
    const send = (packet: Buffer) => raw.socket.send(packet, b.port, HOST);
    const base = { sequence: 1, timestamp: 1000, ssrc: 0x1234 };
    send(rtp({ ...base, payloadType: 101, ssrc: 0x9999, payload: Uint8Array.of(1, 0x80, 0, 160) }));
    send(Buffer.from([0x80, 0, 1, 2, 3]));
    const valid = rtp({ ...base, payloadType: 0, payload: new Uint8Array(FRAME).fill(0x10) });
    send(Buffer.concat([Buffer.from([0x40]), valid.subarray(1)])); // version 1
    send(rtp({ ...base, payloadType: 0, payload: new Uint8Array(8), csrcs: 15 }).subarray(0, 40)); // CSRCs cut off
    send(rtp({ ...base, payloadType: 0, payload: new Uint8Array(0), extensionWords: 40 }).subarray(0, 30));
    const padded = rtp({ ...base, payloadType: 0, payload: new Uint8Array(4), padding: 4 });
    padded[padded.length - 1] = 200; // more padding than packet
    send(padded);
    send(rtp({ ...base, payloadType: 0, payload: new Uint8Array(0) })); // header only
    await sleep(100);
    expect(b.stats.packetsReceived).toBe(0);

    const clip = tone(440, 200);
    const encoded = encodeMuLaw(clip);
    for (let i = 0; i < 10; i++) {
      send(
        rtp({
          payloadType: 0,
          sequence: 100 + i,
          timestamp: 5000 + i * FRAME,
          ssrc: 0x1234,
          payload: encoded.subarray(i * FRAME, (i + 1) * FRAME),
          csrcs: 2,
          extensionWords: 1,
          padding: 3,
        }),
      );
      if (i === 4) send(rtp({ ...base, payloadType: 101, payload: Uint8Array.of(5, 0x0a, 0, 160) }));
      await sleep(20);
    }
    await sleep(150);
    expect(b.stats).toMatchObject({ packetsReceived: 10, packetsLost: 0, packetsLate: 0 });
    const start = firstSound(frames);
    expect(differences(join(...frames), start * FRAME, decodeMuLaw(encoded))).toBe(0);
  });

  it('places 30 ms packets by timestamp across the 32-bit timestamp and 16-bit sequence wraparounds', async () => {
    const b = await session();
    const raw = await udpSocket();
    const frames = listen(b);
    b.start();
    const clip = tone(300, 1200);
    const encoded = encodeALaw(clip);
    const size = 240; // ptime 30
    const began = performance.now();
    for (let i = 0; i * size < clip.length; i++) {
      const packet = rtp({
        payloadType: 8,
        sequence: 0xfffe + i,
        timestamp: 0xffffff00 + i * size,
        ssrc: 0xabcdef,
        payload: encoded.subarray(i * size, (i + 1) * size),
      });
      raw.socket.send(packet, b.port, HOST);
      await sleep(Math.max(0, began + (i + 1) * 30 - performance.now()));
    }
    await sleep(150);
    const heard = join(...frames);
    // A-law never decodes to 0, so the first non-zero sample is the first one received.
    const start = heard.findIndex((s) => s !== 0);
    expect(start % FRAME).toBe(0);
    expect(differences(heard, start, decodeALaw(encoded))).toBe(0);
    expect(b.stats).toMatchObject({ packetsReceived: 40, packetsLost: 0, packetsLate: 0 });
  });

  it('starts over when the SSRC changes, and counts late and lost packets', async () => {
    const b = await session();
    const raw = await udpSocket();
    const frames = listen(b);
    b.start();
    const send = (ssrc: number, sequence: number, timestamp: number, payload: Uint8Array) =>
      raw.socket.send(rtp({ payloadType: 0, sequence, timestamp, ssrc, payload }), b.port, HOST);
    const first = encodeMuLaw(tone(440, 400));
    const second = encodeMuLaw(tone(1000, 400));
    // Packets go out on a fixed 20 ms schedule, so a late timer on a loaded machine does not push
    // every later packet back with it.
    const began = performance.now();
    const pace = (packet: number) => sleep(Math.max(0, began + (packet + 1) * 20 - performance.now()));
    for (let i = 0; i < 20; i++) {
      // Packet 5 is held back until after its time; packet 8 never comes.
      if (i !== 5 && i !== 8) send(1, 10 + i, 1000 + i * FRAME, first.subarray(i * FRAME, (i + 1) * FRAME));
      if (i === 15) send(1, 15, 1000 + 5 * FRAME, first.subarray(5 * FRAME, 6 * FRAME));
      await pace(i);
    }
    for (let i = 0; i < 20; i++) {
      send(2, 60000 + i, 123456789 + i * FRAME, second.subarray(i * FRAME, (i + 1) * FRAME));
      await pace(20 + i);
    }
    await sleep(150);
    const high = frames.filter((frame) => rms(frame) > 1000 && toneShare(frame, RATE, 1000) > 0.9).length;
    const low = frames.filter((frame) => rms(frame) > 1000 && toneShare(frame, RATE, 440) > 0.9).length;
    // The second source is heard whole; the first until the switch dropped what it had buffered.
    expect(high).toBe(20);
    expect(low).toBeGreaterThanOrEqual(12);
    expect(low).toBeLessThanOrEqual(18);
    expect(b.stats).toMatchObject({ packetsReceived: 39, packetsLost: 1, packetsLate: 1 });
  });
});

describe('RTP listening', () => {
  it("hands received audio to the listener in order as it arrives, not after the jitter buffer's depth", async () => {
    // A 1.5 s playout depth: without the listener's own path nothing would be heard for 1.5 s.
    const b = await session({ jitterMs: 1500 });
    const raw = await udpSocket();
    const heard: Array<{ frame: Int16Array; receivedAt: number }> = [];
    b.on('audio', (frame, receivedAt) => heard.push({ frame, receivedAt }));
    b.start();
    const clip = tone(440, 200);
    const encoded = encodeMuLaw(clip);
    const send = (i: number) =>
      raw.socket.send(
        rtp({
          payloadType: 0,
          sequence: 500 + i,
          timestamp: 8000 + i * FRAME,
          ssrc: 7,
          payload: encoded.subarray(i * FRAME, (i + 1) * FRAME),
        }),
        b.port,
        HOST,
      );
    const began = performance.timeOrigin + performance.now();
    for (let i = 0; i < 10; i++) {
      // Packets 3 and 4 swapped on the way.
      if (i === 3) continue;
      send(i);
      if (i === 4) send(3);
      await sleep(20);
    }
    await sleep(300);
    const sounding = heard.filter((entry) => rms(entry.frame) > 1000);
    // All ten frames already, in their order, sample for sample.
    expect(sounding).toHaveLength(10);
    const start = heard.indexOf(sounding[0] as (typeof heard)[number]);
    expect(differences(join(...heard.map((entry) => entry.frame)), start * FRAME, decodeMuLaw(encoded))).toBe(
      0,
    );
    // Each stamped with when it was known here: after the sending began, in order.
    for (const [i, entry] of sounding.entries()) {
      expect(entry.receivedAt).toBeGreaterThanOrEqual(began);
      expect(entry.receivedAt).toBeGreaterThanOrEqual(sounding[i - 1]?.receivedAt ?? began);
    }
  });

  it('keeps what the far end said for the listener when the event loop stalls past the catch-up', async () => {
    const b = await session();
    const raw = await udpSocket();
    const frames = listen(b);
    b.start();
    const encoded = encodeMuLaw(tone(440, 200));
    for (let i = 0; i < 10; i++) {
      raw.socket.send(
        rtp({
          payloadType: 0,
          sequence: 40 + i,
          timestamp: 320 + i * FRAME,
          ssrc: 3,
          payload: encoded.subarray(i * FRAME, (i + 1) * FRAME),
        }),
        b.port,
        HOST,
      );
    }
    // The packets are in; then a stall long enough that their playout ticks are skipped.
    await sleep(30);
    const until = performance.now() + 600;
    while (performance.now() < until) {
      // busy: no timer can fire
    }
    await sleep(100);
    const start = firstSound(frames);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(differences(join(...frames), start * FRAME, decodeMuLaw(encoded))).toBe(0);
  });

  it('makes the listener wait for a missing packet no longer than the playout does: silence in its place', async () => {
    const b = await session({ jitterMs: 60 });
    const raw = await udpSocket();
    const frames = listen(b);
    b.start();
    const encoded = encodeMuLaw(tone(440, 200));
    for (let i = 0; i < 10; i++) {
      // Packet 2 never comes; the stream stops after packet 9.
      if (i !== 2) {
        raw.socket.send(
          rtp({
            payloadType: 0,
            sequence: 100 + i,
            timestamp: i * FRAME,
            ssrc: 9,
            payload: encoded.subarray(i * FRAME, (i + 1) * FRAME),
          }),
          b.port,
          HOST,
        );
      }
      await sleep(20);
    }
    await sleep(400);
    const start = firstSound(frames);
    const heard = join(...frames);
    const expected = decodeMuLaw(encoded);
    for (let frame = 0; frame < 10; frame++) {
      const want =
        frame === 2 ? new Int16Array(FRAME) : expected.subarray(frame * FRAME, (frame + 1) * FRAME);
      expect(differences(heard, (start + frame) * FRAME, want), `frame ${frame}`).toBe(0);
    }
    // After the stream stopped, silence goes on at the clock's pace.
    expect(frames.length - start).toBeGreaterThan(15);
    expect(frames.slice(start + 10).every((frame) => frame.every((s) => s === 0))).toBe(true);
  });
});

describe('RTP recording', () => {
  it('writes a stereo WAV while the call runs: left what was sent, right what was heard', async () => {
    const a = await session();
    const file = tempFile('call.wav');
    const b = await session({ recordPath: file });
    a.setRemote(HOST, b.port, 8);
    const began = performance.now();
    b.start();
    a.start();
    await a.play(tone(440, 1000));
    await sleep(200);
    // Streamed: most of it is on disk before the call ends.
    expect(fs.statSync(file).size).toBeGreaterThanOrEqual(44 + RATE * 4);
    await b.close();
    const ranSeconds = (performance.now() - began) / 1000;
    await b.close();

    const wav = fs.readFileSync(file);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt32LE(16)).toBe(16);
    expect(wav.readUInt16LE(20)).toBe(1); // PCM
    expect(wav.readUInt16LE(22)).toBe(2); // stereo
    expect(wav.readUInt32LE(24)).toBe(8000);
    expect(wav.readUInt32LE(28)).toBe(32000);
    expect(wav.readUInt16LE(32)).toBe(4);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.toString('ascii', 36, 40)).toBe('data');
    expect(wav.readUInt32LE(40)).toBe(wav.length - 44);

    const frames = (wav.length - 44) / 4;
    expect(Math.abs(frames / RATE - ranSeconds)).toBeLessThan(0.1);
    const left = new Int16Array(frames);
    const right = new Int16Array(frames);
    for (let i = 0; i < frames; i++) {
      left[i] = wav.readInt16LE(44 + 4 * i);
      right[i] = wav.readInt16LE(46 + 4 * i);
    }
    expect(left.every((s) => s === 0)).toBe(true);
    const loud: number[] = [];
    for (let at = 0; at + FRAME <= frames; at += FRAME) {
      const frame = right.subarray(at, at + FRAME);
      if (rms(frame) > 1000) loud.push(at / FRAME);
      if (rms(frame) > 1000) expect(toneShare(frame, RATE, 440)).toBeGreaterThan(0.9);
    }
    expect(loud.length).toBe(50);
    expect((loud.at(-1) ?? 0) - (loud[0] ?? 0)).toBe(49);
  });

  it('stops recording at maxRecordSeconds while the call goes on', async () => {
    const file = tempFile('short.wav');
    const b = await session({ recordPath: file, maxRecordSeconds: 0.3 });
    const frames = listen(b);
    b.start();
    await sleep(600);
    await b.close();
    expect(frames.length).toBeGreaterThan(25);
    const wav = fs.readFileSync(file);
    expect(wav.readUInt32LE(40)).toBe(0.3 * RATE * 4);
    expect(wav.length).toBe(44 + 0.3 * RATE * 4);
  });

  it('closes cleanly before start(), and twice: an empty but valid WAV', async () => {
    const file = tempFile('empty.wav');
    const b = await session({ recordPath: file });
    await Promise.all([b.close(), b.close()]);
    await b.close();
    const wav = fs.readFileSync(file);
    expect(wav.length).toBe(44);
    expect(wav.readUInt32LE(4)).toBe(36);
    expect(wav.readUInt32LE(40)).toBe(0);
  });
});

describe('RTP playback', () => {
  it('resolves play() once the clip has been sent, about its duration later', async () => {
    const a = await session();
    const b = await session();
    a.setRemote(HOST, b.port, 0);
    a.start();
    const began = performance.now();
    let firstAt = 0;
    const played = a.play(tone(440, 500), (at) => {
      firstAt = at;
    });
    expect(a.playing).toBe(true);
    expect(await played).toEqual({ playedMs: 500, interrupted: false });
    // The first packet's wall-clock time was reported when it went out.
    expect(firstAt).toBeGreaterThan(Date.now() - 2000);
    expect(firstAt).toBeLessThanOrEqual(Date.now());
    // The last of 25 packets leaves on the 25th tick, 480 ms after the first.
    const elapsed = performance.now() - began;
    expect(elapsed).toBeGreaterThan(440);
    expect(elapsed).toBeLessThan(700);
    expect(a.playing).toBe(false);
    expect(a.stats.packetsSent).toBeGreaterThanOrEqual(25);
  });

  it('resolves everything queued at once on stopPlayback()', async () => {
    const a = await session();
    const b = await session();
    a.setRemote(HOST, b.port, 0);
    a.start();
    const began = performance.now();
    const first = a.play(tone(440, 2000));
    const second = a.play(tone(440, 1000));
    await sleep(200);
    a.stopPlayback();
    const [cut, dropped] = await Promise.all([first, second]);
    expect(performance.now() - began).toBeLessThan(400);
    // How much of each went out before the stop: some of the first, none of the second.
    expect(cut.interrupted).toBe(true);
    expect(cut.playedMs).toBeGreaterThan(0);
    expect(cut.playedMs).toBeLessThan(2000);
    expect(cut.playedMs % 20).toBe(0);
    expect(dropped).toEqual({ playedMs: 0, interrupted: true });
    expect(a.playing).toBe(false);
  });

  it('holds speech until there is somewhere to send it, and close() resolves what is left', async () => {
    const a = await session();
    const b = await session();
    a.start();
    let done = false;
    const waiting = a.play(tone(440, 100)).then(() => {
      done = true;
    });
    await sleep(150);
    expect(done).toBe(false);
    expect(a.stats.packetsSent).toBe(0);
    a.setRemote(HOST, b.port, 8);
    await waiting;
    expect(a.stats.packetsSent).toBeGreaterThanOrEqual(5);
    const pending = a.play(tone(440, 5000));
    await a.close();
    await pending;
    await expect(a.play(tone(440, 100))).resolves.toEqual({ playedMs: 0, interrupted: true });
  });
});

describe('RTP port choice', () => {
  /** An even port with the even one after it both free on loopback, as far as a quick probe can tell. */
  async function freeEvenPair(): Promise<number> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const base = 42000 + 2 * Math.floor(Math.random() * 8000);
      const probes = await Promise.all(
        [base, base + 2].map(
          (port) =>
            new Promise<boolean>((resolve) => {
              const socket = dgram.createSocket('udp4');
              socket.once('error', () => resolve(false));
              socket.bind(port, HOST, () => socket.close(() => resolve(true)));
            }),
        ),
      );
      if (probes.every(Boolean)) return base;
    }
    throw new Error('no free pair of even ports found');
  }

  it('binds distinct even ports in the range, then fails clearly when none is left', async () => {
    const base = await freeEvenPair();
    const range: [number, number] = [base, base + 2];
    const one = await session({ portRange: range });
    const two = await session({ portRange: range });
    expect([one.port, two.port].sort((x, y) => x - y)).toEqual([base, base + 2]);
    await expect(session({ portRange: range })).rejects.toThrow(
      `no free RTP port on ${HOST} in ${base}-${base + 2}: all 2 even ports are in use`,
    );
    await expect(session({ portRange: [base + 1, base + 1] })).rejects.toThrow('holds no even port');
  });

  it('rejects a bind address that is not an IP address', async () => {
    await expect(session({ bindAddress: 'localhost' })).rejects.toThrow('must be an IP address');
  });
});

describe('DTMF as RFC 4733 telephone-events', () => {
  it('sends each digit as event packets: marker first, one timestamp, growing duration, three end packets', async () => {
    const far = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => far.bind(0, HOST, () => resolve()));
    const packets: Buffer[] = [];
    far.on('message', (packet) => packets.push(packet));
    try {
      const a = await session();
      a.setRemote(HOST, far.address().port, 0);
      a.start();
      const speech = a.play(tone(440, 200));
      await a.sendDtmf('1#', 96);
      await speech;
      await sleep(150);
      await a.close();
      const events = packets.filter((packet) => (packet.readUInt8(1) & 0x7f) === 96);
      const digits = new Map<number, Buffer[]>();
      for (const packet of events) {
        const timestamp = packet.readUInt32BE(4);
        digits.set(timestamp, [...(digits.get(timestamp) ?? []), packet]);
      }
      expect([...digits.values()].map((digit) => digit[0]?.readUInt8(12))).toEqual([1, 11]);
      for (const digit of digits.values()) {
        expect(digit).toHaveLength(8);
        expect(digit.map((packet) => packet.length)).toEqual(Array(8).fill(16));
        expect(digit.map((packet) => (packet.readUInt8(1) & 0x80) !== 0)).toEqual([
          true,
          ...Array(7).fill(false),
        ]);
        expect(digit.map((packet) => packet.readUInt16BE(14))).toEqual([
          160, 320, 480, 640, 800, 800, 800, 800,
        ]);
        expect(digit.map((packet) => (packet.readUInt8(13) & 0x80) !== 0)).toEqual([
          ...Array(5).fill(false),
          true,
          true,
          true,
        ]);
        // Sequence numbers go on one by one through the event.
        const sequences = digit.map((packet) => packet.readUInt16BE(2));
        expect(sequences.slice(1).map((seq, i) => (seq - (sequences[i] ?? 0)) & 0xffff)).toEqual(
          Array(7).fill(1),
        );
      }
      // The speech queued before the digits went out whole, in its own payload type.
      expect(packets.filter((packet) => (packet.readUInt8(1) & 0x7f) === 0).length).toBeGreaterThanOrEqual(
        10,
      );
    } finally {
      far.close();
    }
  });
});
