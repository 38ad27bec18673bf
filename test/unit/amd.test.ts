import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectAnsweringMachine, listenForVerdict, waitForGreetingEnd } from '../../src/voice/amd.js';
import { join, silence, tone } from '../helpers/audio.js';

const RATE = 8000;

/** Speech from espeak-ng (Debian), resampled to the 8 kHz of a phone line. */
function speak(text: string): Int16Array {
  const file = path.join(os.tmpdir(), `amd-${process.pid}-${Date.now()}.wav`);
  execFileSync('espeak-ng', ['-w', file, text]);
  const wav = fs.readFileSync(file);
  fs.rmSync(file, { force: true });
  const sourceRate = wav.readUInt32LE(24);
  const dataAt = wav.indexOf('data') + 8;
  const source = new Int16Array(
    wav.buffer.slice(wav.byteOffset + dataAt, wav.byteOffset + wav.length - ((wav.length - dataAt) % 2)),
  );
  const out = new Int16Array(Math.floor((source.length * RATE) / sourceRate));
  for (let i = 0; i < out.length; i++) {
    const position = (i * sourceRate) / RATE;
    const left = Math.floor(position);
    const fraction = position - left;
    out[i] = Math.round((source[left] ?? 0) * (1 - fraction) + (source[left + 1] ?? 0) * fraction);
  }
  return out;
}

const beep = (ms: number, frequency = 1000) => tone(frequency, ms);

describe('answering-machine detection', () => {
  it('takes a short hello followed by silence for a person', () => {
    const verdict = detectAnsweringMachine(join(silence(300), speak('Hello?'), silence(2000)), RATE);
    expect(verdict).toMatchObject({ kind: 'human', reason: 'a short greeting, then silence' });
    expect(verdict.atMs).toBeLessThan(2500);
  });

  it('takes a long recorded greeting for a machine, before it ends', () => {
    const greeting = speak(
      "Hi, you have reached the voicemail of Jordan Smith. I can't take your call right now. Please leave your name, number and a short message after the tone.",
    );
    const verdict = detectAnsweringMachine(join(silence(200), greeting, beep(400)), RATE);
    expect(verdict).toMatchObject({ kind: 'machine', reason: 'a long greeting' });
    expect(verdict.atMs).toBeLessThan(3500);
  });

  it('takes a beep for a machine, even after a short greeting', () => {
    const verdict = detectAnsweringMachine(
      join(speak('Leave a message.'), silence(300), beep(500, 850)),
      RATE,
    );
    expect(verdict).toMatchObject({ kind: 'machine', reason: 'a beep' });
  });

  it('cannot tell from silence alone', () => {
    expect(detectAnsweringMachine(silence(7000), RATE)).toMatchObject({ kind: 'unknown', reason: 'silence' });
  });
});

describe('the end of a machine greeting (when to leave the message)', () => {
  /** Feeds `pcm` in 20 ms frames to whoever listens; returns what ended the wait. */
  async function feed(
    pcm: Int16Array,
    options: Parameters<typeof waitForGreetingEnd>[2] = {},
  ): Promise<{ why: string; atMs: number }> {
    let listener: ((frame: Int16Array, at: number) => void) | null = null;
    let fed = 0;
    const waiting = waitForGreetingEnd(
      (l) => {
        listener = l;
        return () => {
          listener = null;
        };
      },
      new AbortController().signal,
      options,
    );
    for (let at = 0; at + 160 <= pcm.length && listener; at += 160) {
      (listener as (frame: Int16Array, at: number) => void)(pcm.subarray(at, at + 160), Date.now());
      fed += 20;
    }
    return { why: await Promise.race([waiting, Promise.resolve('still waiting')]), atMs: fed };
  }

  it('ends right after a beep, and after 1.5 s of silence without one', async () => {
    const greeting = speak('Please leave a message after the tone');
    const beep = await feed(join(greeting, tone(1000, 500), silence(2000)));
    expect(beep.why).toBe('beep');
    const beepEndMs = ((greeting.length + 4000) / 8000) * 1000;
    expect(beep.atMs).toBeGreaterThanOrEqual(beepEndMs);
    expect(beep.atMs).toBeLessThanOrEqual(beepEndMs + 100);
    const quiet = await feed(join(greeting, silence(3000)));
    expect(quiet.why).toBe('silence');
    // espeak-ng ends its audio with a few hundred ms of silence, which counts towards the 1.5 s.
    const greetingMs = (greeting.length / 8000) * 1000;
    expect(quiet.atMs).toBeGreaterThan(greetingMs + 1000);
    expect(quiet.atMs).toBeLessThanOrEqual(greetingMs + 1520);
    expect(await feed(join(greeting, greeting, greeting), { maxWaitMs: 2000 })).toEqual({
      why: 'timeout',
      atMs: 2000,
    });
  });

  it('a call that ends stops the wait', async () => {
    const ended = new AbortController();
    ended.abort();
    expect(await waitForGreetingEnd(() => () => {}, ended.signal)).toBe('ended');
    expect((await listenForVerdict(() => () => {}, ended.signal, 3000)).reason).toBe('the call ended');
  });
});
