import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { WebCallTransport } from '../../src/adapters/voice/web-transport.js';
import { decodeWav } from '../../src/voice/audio/wav.js';

/**
 * The browser's transport of a web call over a real WebSocket pair on loopback: the client's PCM
 * reaches the session in 20 ms frames, the agent's speech leaves in 20 ms frames at the pace of
 * the clock, stopPlayback drops what is queued, malformed messages close the connection with a
 * reason and end the call, and the recording holds both directions.
 */

let server: WebSocketServer;
let client: WebSocket;
let transport: WebCallTransport;
/** The server's end of the socket, for a marker sent after the transport's frames. */
let serverEnd: WebSocket;
const received: Array<{ at: number; bytes: number }> = [];
/** Text messages the client received, in order with `received`: how many frames came before each. */
const texts: Array<{ text: string; framesBefore: number }> = [];
let closed: Promise<{ code: number; reason: string }>;

beforeEach(async () => {
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
  client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  received.length = 0;
  texts.length = 0;
  client.on('message', (data, isBinary) => {
    if (isBinary) received.push({ at: performance.now(), bytes: (data as Buffer).length });
    else texts.push({ text: (data as Buffer).toString('utf8'), framesBefore: received.length });
  });
  closed = new Promise((resolve) =>
    client.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  await new Promise<void>((resolve) => client.once('open', () => resolve()));
  serverEnd = await accepted;
  transport = new WebCallTransport({ socket: serverEnd });
});

afterEach(async () => {
  transport.hangup();
  await transport.finish();
  client.terminate();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

/**
 * The frames the browser had received when a marker sent now on the same socket reaches it: every
 * frame the transport sent before now, and none it sends after (one socket keeps the order).
 */
async function framesDelivered(): Promise<number> {
  const marker = `marker-${texts.length}`;
  serverEnd.send(marker);
  await expect.poll(() => texts.some((entry) => entry.text === marker)).toBe(true);
  return texts.find((entry) => entry.text === marker)?.framesBefore ?? -1;
}

/** Resolves once the transport's clock has ticked `count` more times (it hands a frame in each tick). */
function ticks(count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const off = transport.onAudio(() => {
      if (++seen < count) return;
      off();
      resolve();
    });
  });
}

const ramp = (samples: number) => Int16Array.from({ length: samples }, (_, i) => (i % 1000) - 500);

describe('WebCallTransport', () => {
  it('hands what the browser sends to the session in 20 ms frames, in order, whatever the message sizes', async () => {
    const frames: Int16Array[] = [];
    transport.onAudio((frame) => {
      if (frame.some((sample) => sample !== 0)) frames.push(frame.slice());
    });
    const sent = ramp(480); // 60 ms, sent as 100 + 380 samples
    client.send(Buffer.from(sent.slice(0, 100).buffer));
    client.send(Buffer.from(sent.slice(100).buffer));
    await expect.poll(() => frames.length).toBe(3);
    expect(frames.map((frame) => frame.length)).toEqual([160, 160, 160]);
    expect(Array.from(frames.flatMap((frame) => Array.from(frame)))).toEqual(Array.from(sent));
  });

  it('fills the gaps with silence: the session hears a frame every 20 ms while the browser says nothing', async () => {
    const frames: Int16Array[] = [];
    transport.onAudio((frame) => {
      frames.push(frame.slice());
    });
    // The frames keep coming (a loaded machine's late timer only delays them).
    await expect.poll(() => frames.length).toBeGreaterThanOrEqual(10);
    for (const frame of frames) expect(frame).toEqual(new Int16Array(160));
  });

  it("sends the agent's speech in 320-byte frames paced at 20 ms, and reports its first packet", async () => {
    let first = 0;
    const started = performance.now();
    const result = await transport.play(ramp(8000 * 0.4), (at) => {
      first = at;
    });
    expect(result).toEqual({ playedMs: 400, interrupted: false });
    expect(first).toBeGreaterThan(0);
    expect(await framesDelivered()).toBe(20);
    expect(received.map((message) => message.bytes)).toEqual(Array(20).fill(320));
    // 20 frames of 20 ms take at least about 400 ms to go out (more on a loaded machine), not a burst.
    expect((received.at(-1)?.at ?? 0) - started).toBeGreaterThan(300);
  });

  it('drops the queued speech on stopPlayback: the play resolves interrupted with what went out', async () => {
    const playing = transport.play(ramp(8000 * 2));
    await ticks(5);
    transport.stopPlayback();
    const result = await playing;
    expect(result.interrupted).toBe(true);
    expect(result.playedMs).toBeGreaterThan(0);
    expect(result.playedMs).toBeLessThan(2000);
    // What the browser gets is exactly what went out before the stop (frames still on the socket
    // at the stop arrive after it), and nothing more follows in the ticks after it.
    expect(await framesDelivered()).toBe(result.playedMs / 20);
    await ticks(10);
    expect(await framesDelivered()).toBe(result.playedMs / 20);
    expect(received.length).toBe(result.playedMs / 20);
  });

  it.each([
    ['an odd number of bytes', Buffer.alloc(3), 1007, /even number of bytes/],
    ['text that is not JSON', '{oops', 1007, /must be JSON/],
    ['a message of no known type', JSON.stringify({ type: 'sing' }), 1008, /unknown message/],
  ])('closes on %s with a reason, and ends the call', async (_name, message, code, reason) => {
    client.send(message);
    expect(await closed).toEqual({ code, reason: expect.stringMatching(reason) });
    await aborted(transport.signal);
  });

  it('ends the call when the browser hangs up', async () => {
    client.send(JSON.stringify({ type: 'hangup' }));
    await aborted(transport.signal);
  });

  it('ends the call when the browser goes away', async () => {
    client.terminate();
    await aborted(transport.signal);
  });

  it('records both directions: left the agent, right the browser', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-web-rec-'));
    try {
      await transport.record(path.join(dir, 'call.wav'), 60);
      client.send(Buffer.from(ramp(1600).buffer));
      await transport.play(ramp(1600));
      transport.hangup();
      const file = await transport.finish();
      expect(file?.contentType).toBe('audio/wav');
      const wav = fs.readFileSync(file?.path ?? '');
      expect(wav.readUInt16LE(22)).toBe(2); // stereo
      const { rate, samples } = decodeWav(wav);
      expect(rate).toBe(8000);
      expect(samples.length).toBeGreaterThanOrEqual(1600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
