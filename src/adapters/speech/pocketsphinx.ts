/**
 * Speech in with pocketsphinx (Debian's pocketsphinx_continuous and its en-us model): one
 * utterance of phone audio to its words, with as many processes at once as there are cores.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PHONE_RATE, toInt16 } from '../../voice/audio/pcm.js';
import { resample } from '../../voice/audio/resample.js';
import { DEFAULT_MODEL_DIR, modelFiles, POCKETSPHINX, runTool, Semaphore, SpeechToolError } from './tools.js';

/** The en-us acoustic model was trained on 16 kHz audio (feat.params: upperf 6800 Hz). */
const MODEL_RATE = 16000;

/** pocketsphinx uses one core per process; more processes than cores only slow each one down. */
const transcriptions = new Semaphore(os.availableParallelism());

/** Sets how many pocketsphinx processes may run at once (the default is the number of cores). */
export function setTranscriptionConcurrency(limit: number): void {
  transcriptions.limit = limit;
}

/** Transcriptions running and waiting for a free pocketsphinx slot. */
export function transcriptionLoad(): { running: number; queued: number } {
  return { running: transcriptions.active, queued: transcriptions.queued };
}

export interface TranscribeOptions {
  /** Rate of `pcm`; 8000 (the phone line) unless given. */
  sampleRate?: number;
  /** Directory of the en-us model (acoustic model, language model and dictionary). */
  modelDir?: string;
  /** Kills pocketsphinx after this long; the default grows with the audio's length. */
  timeoutMs?: number;
}

/**
 * Measured here (2 cores): loading the model takes 0.3 s, and a whole transcription of 3 s of
 * phone audio 1.1 to 1.9 s; the timeout leaves room for a machine many times busier.
 */
const TRANSCRIBE_BASE_TIMEOUT_MS = 15_000;
/** Frames quieter than -50 dBFS (RMS 104, as the utterance detector's floor) are not speech. */
const SPEECH_FLOOR_RMS = 104;
/**
 * Narrowband audio is given two noises before decoding, levels relative to the speech: one in the
 * missing band above 4 kHz (-18 dB), and a white one over the whole band (-25 dB), as on a real
 * line, so that the gaps of digital silence look like quiet rather than like nothing the model
 * has seen. Measured on 24 espeak-ng sentences at 8 kHz (3 voices and speeds, 129 words), cut by
 * the energy utterance detector of the time: plain upsampling recognised 11 words, these two noises 56; the high band
 * alone 32, the white noise alone 52, white at -35 dB 37 and at -15 dB 35. Running the model at
 * -samprate 8000 (-nfft 256, filters cut to 3.5 kHz) recognised 5 of 124 in an earlier round.
 */
const HIGH_BAND_NOISE_DB = -18;
const WHITE_NOISE_DB = -25;

/** RMS of the 20 ms frames louder than the speech floor; 0 when there are none. */
function speechLevel(pcm: Int16Array, rate: number): number {
  const frame = Math.max(1, Math.round(rate / 50));
  let sum = 0;
  let count = 0;
  for (let start = 0; start < pcm.length; start += frame) {
    const end = Math.min(pcm.length, start + frame);
    let energy = 0;
    for (let i = start; i < end; i++) energy += (pcm[i] ?? 0) ** 2;
    energy /= end - start;
    if (energy >= SPEECH_FLOOR_RMS ** 2) {
      sum += energy;
      count++;
    }
  }
  return count === 0 ? 0 : Math.sqrt(sum / count);
}

/** Deterministic white noise (xorshift32), so that a transcription is repeatable. */
function whiteNoise(length: number, seed: number): Int16Array {
  const out = new Int16Array(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state % 8192;
  }
  return out;
}

/** Adds `noise` to `audio` in place, `db` below `speechRms`; `mirror` negates every other sample. */
function mixNoise(
  audio: Int16Array,
  noise: Int16Array,
  speechRms: number,
  db: number,
  mirror: boolean,
): void {
  const noiseRms = Math.sqrt(noise.reduce((sum, v) => sum + v * v, 0) / Math.max(1, noise.length));
  if (noiseRms === 0) return;
  const gain = (speechRms * 10 ** (db / 20)) / noiseRms;
  for (let i = 0; i < audio.length; i++) {
    const sign = mirror && i % 2 === 1 ? -1 : 1;
    audio[i] = toInt16((audio[i] ?? 0) + sign * (noise[i] ?? 0) * gain);
  }
}

/**
 * Prepares narrowband audio (upsampled from `sourceRate`) for the wideband model: without energy
 * above the source's Nyquist frequency the model's top filters see next to nothing and its
 * cepstra are far from anything it was trained on. The high-band noise is white noise
 * band-limited by the resampler and mirrored to the top of the band (multiplying by (-1)^n moves
 * f to 8 kHz - f).
 */
function addLineNoise(audio: Int16Array, sourceRate: number, speechRms: number): void {
  const missingRate = MODEL_RATE - sourceRate;
  if (missingRate >= 200) {
    const length = Math.ceil((audio.length * missingRate) / MODEL_RATE) + 1;
    const band = resample(whiteNoise(length, 0x2545f491), missingRate, MODEL_RATE);
    mixNoise(audio, band, speechRms, HIGH_BAND_NOISE_DB, true);
  }
  mixNoise(audio, whiteNoise(audio.length, 0x1234567), speechRms, WHITE_NOISE_DB, false);
}

/**
 * Transcribes one utterance with pocketsphinx and returns the recognised words in lower case
 * ('' for none). The en-us model is wideband (16 kHz, filter bank up to 6.8 kHz), so phone audio
 * is upsampled to 16 kHz and given some line noise (see `addLineNoise`). pocketsphinx_continuous
 * reads it as headerless 16-bit samples (`-infile` naming a file not ending in .wav) from a
 * temporary file: it fopen()s the path, which fails on the socket Node gives a child as stdin.
 */
export function transcribe(pcm: Int16Array, options: TranscribeOptions = {}): Promise<string> {
  const rate = options.sampleRate ?? PHONE_RATE;
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const files = modelFiles(modelDir);
  // Checked here because with -logfn /dev/null pocketsphinx would only say "exited with 1".
  if (!Object.values(files).every((file) => fs.existsSync(file))) {
    const message = `en-us model not found in ${modelDir} (install pocketsphinx-en-us)`;
    return Promise.reject(new SpeechToolError(POCKETSPHINX, 'missing', message));
  }
  const level = speechLevel(pcm, rate);
  if (level === 0) return Promise.resolve('');
  const audio = resample(pcm, rate, MODEL_RATE);
  if (rate < MODEL_RATE) addLineNoise(audio, rate, level);
  const timeoutMs = options.timeoutMs ?? TRANSCRIBE_BASE_TIMEOUT_MS + (2 * 1000 * audio.length) / MODEL_RATE;
  const input = Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength);
  return transcriptions.run(async () => {
    const file = path.join(os.tmpdir(), `outdial-asr-${randomUUID()}.raw`);
    try {
      await fs.promises.writeFile(file, input, { flag: 'wx', mode: 0o600 });
      const output = await runTool({
        tool: POCKETSPHINX,
        args: [
          '-infile',
          file,
          '-hmm',
          files.hmm,
          '-lm',
          files.lm,
          '-dict',
          files.dict,
          '-samprate',
          String(MODEL_RATE),
          '-logfn',
          '/dev/null',
        ],
        timeoutMs,
      });
      return parseHypotheses(output.toString('utf8'));
    } finally {
      await fs.promises.rm(file, { force: true });
    }
  });
}

/**
 * pocketsphinx_continuous prints one hypothesis line per stretch of speech its own VAD finds, and
 * with -logfn /dev/null nothing else; log-looking lines are skipped anyway, in case a build writes
 * them to stdout. Noise and filler tokens such as <sil>, [NOISE] or ++breath++ are dropped, and
 * alternate pronunciations ("read(2)") lose their suffix.
 */
export function parseHypotheses(stdout: string): string {
  const words: string[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    if (/^(INFO|WARN|WARNING|ERROR|FATAL|DEBUG|SYSTEM_ERROR)\b/.test(line.trim())) continue;
    if (/^\s*[A-Za-z_]+\.c\(\d+\)/.test(line)) continue;
    for (const token of line.trim().split(/\s+/)) {
      if (!token || /^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(token)) continue;
      words.push(token.replace(/\(\d+\)$/, '').toLowerCase());
    }
  }
  return words.join(' ');
}
