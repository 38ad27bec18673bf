/**
 * ITU-T G.711 companding between 16-bit linear PCM and the 8-bit codes of a phone line: mu-law
 * (PCMU, RTP payload type 0) and A-law (PCMA, payload type 8). Both split the magnitude into eight
 * segments, each twice as wide as the one below, with sixteen steps per segment, so the error
 * stays near 3% of the signal from quiet speech to full scale.
 *
 * The per-sample rules below define the codes; whole buffers go through lookup tables built
 * from them once (64 KiB per law for encoding, 256 entries for decoding), since a server
 * converts 8000 samples a second in each direction of every call.
 */

/** Mu-law adds this bias before finding the segment, so that segment s starts at 2^(s+7). */
const MU_BIAS = 0x84;
/** The largest magnitude that still fits in 15 bits once the bias is added (32767 - 132). */
const MU_CLIP = 32635;

/** Position of the highest set bit of a positive integer. */
const topBit = (value: number) => 31 - Math.clz32(value);

function muLawFromLinear(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  // One's complement for negative samples, as in G.711's reference code (ITU-T G.191).
  const magnitude = Math.min(sample < 0 ? -1 - sample : sample, MU_CLIP) + MU_BIAS;
  // magnitude is 132..32767: its top bit is 7..14, which gives segments 0..7.
  const segment = topBit(magnitude) - 7;
  const step = (magnitude >> (segment + 3)) & 0x0f;
  // Codes are sent inverted, so that silence (all ones) keeps the line's bits changing.
  return ~(sign | (segment << 4) | step) & 0xff;
}

function linearFromMuLaw(code: number): number {
  const bits = ~code & 0xff;
  const segment = (bits >> 4) & 0x07;
  // The middle of the step's interval, with the bias taken off again.
  const magnitude = ((((bits & 0x0f) << 3) + MU_BIAS) << segment) - MU_BIAS;
  return bits & 0x80 ? -magnitude : magnitude;
}

function aLawFromLinear(sample: number): number {
  const positive = sample >= 0;
  // One's complement for negative samples, as for mu-law: -32768 stays in range.
  const magnitude = positive ? sample : -1 - sample;
  let code: number;
  if (magnitude < 256) {
    // The two lowest segments share one step size (16), so segment 0 spans 0..255.
    code = magnitude >> 4;
  } else {
    const segment = topBit(magnitude) - 7;
    code = (segment << 4) | ((magnitude >> (segment + 3)) & 0x0f);
  }
  // The sign bit is set for positive values, and the even bits are inverted on the line.
  return (positive ? code | 0x80 : code) ^ 0x55;
}

function linearFromALaw(code: number): number {
  const bits = code ^ 0x55;
  const segment = (bits >> 4) & 0x07;
  const step = bits & 0x0f;
  const magnitude = segment === 0 ? (step << 4) + 8 : ((step << 4) + 0x108) << (segment - 1);
  return bits & 0x80 ? magnitude : -magnitude;
}

/** Indexed by a sample's 16-bit two's complement pattern (sample & 0xffff). */
const MU_ENCODE = new Uint8Array(65536);
const A_ENCODE = new Uint8Array(65536);
const MU_DECODE = new Int16Array(256);
const A_DECODE = new Int16Array(256);
for (let pattern = 0; pattern < 65536; pattern++) {
  const sample = pattern < 32768 ? pattern : pattern - 65536;
  MU_ENCODE[pattern] = muLawFromLinear(sample);
  A_ENCODE[pattern] = aLawFromLinear(sample);
}
for (let code = 0; code < 256; code++) {
  MU_DECODE[code] = linearFromMuLaw(code);
  A_DECODE[code] = linearFromALaw(code);
}

/** One mu-law code (0..255) as a linear sample. */
export function muLawToLinear(code: number): number {
  return MU_DECODE[code & 0xff] ?? 0;
}

/** One A-law code (0..255) as a linear sample. */
export function aLawToLinear(code: number): number {
  return A_DECODE[code & 0xff] ?? 0;
}

/** Encodes `pcm` into `out` from `offset` on, one byte per sample, without allocating. */
export function encodeMuLawInto(pcm: Int16Array, out: Uint8Array, offset = 0): void {
  for (let i = 0; i < pcm.length; i++) out[offset + i] = MU_ENCODE[(pcm[i] ?? 0) & 0xffff] ?? 0;
}

/** Encodes `pcm` into `out` from `offset` on, one byte per sample, without allocating. */
export function encodeALawInto(pcm: Int16Array, out: Uint8Array, offset = 0): void {
  for (let i = 0; i < pcm.length; i++) out[offset + i] = A_ENCODE[(pcm[i] ?? 0) & 0xffff] ?? 0;
}

export function encodeMuLaw(pcm: Int16Array): Buffer {
  const out = Buffer.allocUnsafe(pcm.length);
  encodeMuLawInto(pcm, out);
  return out;
}

export function decodeMuLaw(data: Uint8Array): Int16Array {
  const out = new Int16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = MU_DECODE[data[i] ?? 0] ?? 0;
  return out;
}

export function encodeALaw(pcm: Int16Array): Buffer {
  const out = Buffer.allocUnsafe(pcm.length);
  encodeALawInto(pcm, out);
  return out;
}

export function decodeALaw(data: Uint8Array): Int16Array {
  const out = new Int16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = A_DECODE[data[i] ?? 0] ?? 0;
  return out;
}
