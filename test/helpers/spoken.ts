import { synthesize } from '../../src/adapters/speech/espeak.js';
import { RECORDING_VOICES } from '../../src/adapters/voice/sim-recording.js';
import type { TranscriptEntry } from '../../src/domain/call.js';

/** The samples of a 16-bit mono WAV file (after its 44-byte header). */
export function wavSamples(wav: Buffer): Int16Array {
  return new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
}

/**
 * Where each turn of `turns` is found in `pcm`, spoken by espeak-ng in its role's voice (160 words
 * a minute), in order, each after the one before: -1 for a turn not found. espeak-ng renders the
 * same text the same way, so a recording of the transcript holds exactly these samples.
 */
export async function spokenTurnOffsets(pcm: Int16Array, turns: TranscriptEntry[]): Promise<number[]> {
  const offsets: number[] = [];
  let from = 0;
  for (const turn of turns) {
    const speech = await synthesize(turn.content, {
      voice: RECORDING_VOICES[turn.role],
      wordsPerMinute: 160,
    });
    const at = indexOf(pcm, speech, from);
    offsets.push(at);
    if (at >= 0) from = at + speech.length;
  }
  return offsets;
}

function indexOf(haystack: Int16Array, needle: Int16Array, from: number): number {
  if (needle.length === 0) return from;
  const first = needle[0];
  for (let i = from; i + needle.length <= haystack.length; i++) {
    if (haystack[i] !== first) continue;
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Stretches of sound in `pcm` separated by at least `minGap` silent samples. */
export function voicedStretches(pcm: Int16Array, minGap: number): number {
  let stretches = 0;
  let silent = minGap;
  for (const sample of pcm) {
    if (Math.abs(sample) > 0) {
      if (silent >= minGap) stretches++;
      silent = 0;
    } else {
      silent++;
    }
  }
  return stretches;
}
