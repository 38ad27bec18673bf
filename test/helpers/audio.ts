/** Test audio: 16-bit mono PCM built from silence and tones, 8 kHz unless said otherwise. */

export const silence = (ms: number, rate = 8000) => new Int16Array(Math.round((rate * ms) / 1000));

export const tone = (frequency: number, ms: number, { rate = 8000, amplitude = 8000 } = {}) =>
  Int16Array.from({ length: Math.round((rate * ms) / 1000) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / rate)),
  );

export const join = (...parts: Int16Array[]) => {
  const out = new Int16Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};
