import type { TranscriptEntry } from '../../domain/call.js';

const SAMPLE_RATE = 8000;
/** Longest recording synthesized: ten minutes of 8 kHz 16-bit mono is 9.6 MB. */
const MAX_SECONDS = 600;

/**
 * A stand-in recording: each transcript turn becomes a voiced tone (the agent lower, the contact
 * higher) whose length follows the turn's words, separated by short silences, stretched over the
 * call's duration. It is real 8 kHz PCM that any audio player plays.
 */
export function synthesizeConversationWav(turns: TranscriptEntry[], durationSeconds: number): Buffer {
  const seconds = Math.min(Math.max(durationSeconds, 1), MAX_SECONDS);
  const totalSamples = Math.round(seconds * SAMPLE_RATE);
  const pcm = new Int16Array(totalSamples);
  const weights = turns.map((turn) => Math.max(turn.content.split(/\s+/).length, 1));
  const totalWeight = weights.reduce((a, b) => a + b, 0) || 1;
  const gap = Math.round(0.3 * SAMPLE_RATE);
  const usable = Math.max(totalSamples - gap * turns.length, 0);
  let cursor = 0;
  turns.forEach((turn, index) => {
    const length = Math.floor((usable * (weights[index] ?? 1)) / totalWeight);
    const base = turn.role === 'assistant' ? 180 : 260;
    for (let i = 0; i < length && cursor + i < totalSamples; i++) {
      const t = i / SAMPLE_RATE;
      // A little vibrato and a syllable-rate envelope so it sounds like speech rather than a test tone.
      const freq = base + 25 * Math.sin(2 * Math.PI * 5 * t);
      const envelope = 0.55 + 0.45 * Math.sin(2 * Math.PI * 4 * t);
      pcm[cursor + i] = Math.round(9000 * envelope * Math.sin(2 * Math.PI * freq * t));
    }
    cursor += length + gap;
  });
  return encodeWav(pcm);
}

/** The 44-byte header of a 16-bit PCM WAV file holding `dataBytes` of samples. */
export function wavHeader(dataBytes: number, channels: number, sampleRate: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2 * channels, 28);
  header.writeUInt16LE(2 * channels, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

function encodeWav(pcm: Int16Array): Buffer {
  const dataBytes = pcm.length * 2;
  return Buffer.concat([
    wavHeader(dataBytes, 1, SAMPLE_RATE),
    Buffer.from(pcm.buffer, pcm.byteOffset, dataBytes),
  ]);
}
