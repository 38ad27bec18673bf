import { describe, expect, it } from 'vitest';
import {
  aLawToLinear,
  decodeALaw,
  decodeMuLaw,
  encodeALaw,
  encodeMuLaw,
  muLawToLinear,
} from '../../src/voice/audio/g711.js';

/** Every 16-bit sample, from -32768 to 32767. */
const everySample = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);

describe('G.711 mu-law (PCMU)', () => {
  it('encodes the known codes: silence is 0xFF, full scale 0x80 and 0x00', () => {
    // -1 falls in the negative first step (0x7F, "negative zero"); 1 in the positive one.
    expect([...encodeMuLaw(Int16Array.of(0, 32767, -32768, -1, 1, 1000, -1000))]).toEqual([
      0xff, 0x80, 0x00, 0x7f, 0xff, 0xce, 0x4e,
    ]);
    expect([...decodeMuLaw(Uint8Array.of(0xff, 0x7f, 0x80, 0x00))]).toEqual([0, 0, 32124, -32124]);
  });

  it('keeps silence silent', () => {
    const encoded = encodeMuLaw(new Int16Array(160));
    expect(encoded.every((code) => code === 0xff)).toBe(true);
    expect(decodeMuLaw(encoded).every((sample) => sample === 0)).toBe(true);
  });

  it('round-trips every sample within half a step of its segment (about 3%)', () => {
    const decoded = decodeMuLaw(encodeMuLaw(everySample));
    let worst = 0;
    for (let i = 0; i < everySample.length; i++) {
      const sample = everySample[i] ?? 0;
      const error = Math.abs((decoded[i] ?? 0) - sample);
      // Segment s spans (|x| + 132) in [2^(s+7), 2^(s+8)) in steps of 2^(s+3): half a step is at
      // most (|x| + 132) / 32; one more for the one's complement of negative samples.
      const bound = (Math.abs(sample) + 132) / 32 + 1;
      worst = Math.max(worst, error / bound);
      if (error > bound) expect.fail(`sample ${sample} decoded as ${decoded[i]}`);
    }
    expect(worst).toBeGreaterThan(0.5);
  });

  it('decodes in order: louder input never comes back quieter', () => {
    const decoded = decodeMuLaw(encodeMuLaw(everySample));
    for (let i = 1; i < decoded.length; i++) {
      if ((decoded[i] ?? 0) < (decoded[i - 1] ?? 0)) expect.fail(`not monotonic at ${everySample[i]}`);
    }
  });

  it('agrees with the per-code decoder for all 256 codes', () => {
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const decoded = decodeMuLaw(codes);
    for (const code of codes) expect(decoded[code]).toBe(muLawToLinear(code));
    // Each code decodes to a value that encodes back to it, except negative zero (0x7F reads as 0).
    const again = encodeMuLaw(decoded);
    for (const code of codes) if (code !== 0x7f) expect(again[code]).toBe(code);
  });
});

describe('G.711 A-law (PCMA)', () => {
  it('encodes the known codes: silence is 0xD5, full scale 0xAA and 0x2A', () => {
    expect([...encodeALaw(Int16Array.of(0, -1, 32767, -32768))]).toEqual([0xd5, 0x55, 0xaa, 0x2a]);
    expect([...decodeALaw(Uint8Array.of(0xd5, 0x55, 0xaa, 0x2a))]).toEqual([8, -8, 32256, -32256]);
  });

  it('keeps silence within the first step', () => {
    const encoded = encodeALaw(new Int16Array(160));
    expect(encoded.every((code) => code === 0xd5)).toBe(true);
    expect(decodeALaw(encoded).every((sample) => sample === 8)).toBe(true);
  });

  it('round-trips every sample within half a step (8 below 256, else about 3%)', () => {
    const decoded = decodeALaw(encodeALaw(everySample));
    for (let i = 0; i < everySample.length; i++) {
      const sample = everySample[i] ?? 0;
      const error = Math.abs((decoded[i] ?? 0) - sample);
      const bound = Math.max(8, Math.abs(sample) / 32) + 1;
      if (error > bound) expect.fail(`sample ${sample} decoded as ${decoded[i]}`);
    }
  });

  it('decodes in order, and every code back to itself', () => {
    const decoded = decodeALaw(encodeALaw(everySample));
    for (let i = 1; i < decoded.length; i++) {
      if ((decoded[i] ?? 0) < (decoded[i - 1] ?? 0)) expect.fail(`not monotonic at ${everySample[i]}`);
    }
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const values = decodeALaw(codes);
    for (const code of codes) expect(values[code]).toBe(aLawToLinear(code));
    expect([...encodeALaw(values)]).toEqual([...codes]);
  });
});
