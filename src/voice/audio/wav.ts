/** 16-bit PCM WAV files: the header, writing one, and reading one of any rate. */
import { PHONE_RATE } from './pcm.js';

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

/** A mono 16-bit PCM WAV file of `pcm` at `sampleRate` (8 kHz unless given). */
export function encodeWav(pcm: Int16Array, sampleRate = PHONE_RATE): Buffer {
  const dataBytes = pcm.length * 2;
  return Buffer.concat([
    wavHeader(dataBytes, 1, sampleRate),
    Buffer.from(pcm.buffer, pcm.byteOffset, dataBytes),
  ]);
}

/** A WAV file this module cannot read (not RIFF/WAVE, not 16-bit PCM, no format or data). */
export class WavFormatError extends Error {
  override name = 'WavFormatError';
}

/** WAVE_FORMAT_PCM, and WAVE_FORMAT_EXTENSIBLE (whose sub-format is checked through the bit depth). */
const PCM_FORMATS = new Set([1, 0xfffe]);

/**
 * Reads a 16-bit PCM WAV file of any rate, mono or multi-channel (mixed down to mono). A writer
 * streaming to a pipe cannot seek back to fill in the sizes (espeak-ng writes 0x7ffff000, servers
 * streaming wav write 0 or 0xffffffff), so the data chunk runs to the end of the buffer whenever
 * its header says more, or nothing.
 */
export function decodeWav(wav: Buffer): { rate: number; samples: Int16Array } {
  if (wav.length < 12 || wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') {
    throw new WavFormatError('not a WAV file');
  }
  let rate = 0;
  let channels = 1;
  let at = 12;
  while (at + 8 <= wav.length) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      if (at + 24 > wav.length) break;
      const format = wav.readUInt16LE(at + 8);
      channels = wav.readUInt16LE(at + 10);
      const bits = wav.readUInt16LE(at + 22);
      if (!PCM_FORMATS.has(format) || bits !== 16 || channels < 1) {
        throw new WavFormatError(
          `unsupported WAV format ${format}/${channels}ch/${bits}bit (16-bit PCM only)`,
        );
      }
      rate = wav.readUInt32LE(at + 12);
    } else if (id === 'data') {
      if (rate === 0) break;
      const start = at + 8;
      const available = wav.length - start;
      const length = size === 0 || size > available ? available : size;
      const frameBytes = 2 * channels;
      const frames = Math.floor(length / frameBytes);
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) sum += wav.readInt16LE(start + i * frameBytes + 2 * c);
        samples[i] = Math.round(sum / channels);
      }
      return { rate, samples };
    }
    at += 8 + size + (size % 2);
  }
  throw new WavFormatError('WAV without format or data');
}
