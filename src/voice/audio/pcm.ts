/** The phone line's audio: 8 kHz, 16-bit, mono PCM, the format every voice contract uses. */

/** The phone line's rate: every PCM buffer the voice layers hand out or take by default. */
export const PHONE_RATE = 8000;

/** Rounds and clamps: a typed array would wrap an out-of-range value around instead. */
export function toInt16(value: number): number {
  return Math.max(-32768, Math.min(32767, Math.round(value)));
}

/** The pieces one after the other, in one buffer. */
export function concatPcm(pieces: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}
