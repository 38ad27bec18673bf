/** The phone line's audio: 8 kHz, 16-bit, mono PCM, the format every voice contract uses. */

/** The phone line's rate: every PCM buffer the voice layers hand out or take by default. */
export const PHONE_RATE = 8000;

/** Rounds and clamps: a typed array would wrap an out-of-range value around instead. */
export function toInt16(value: number): number {
  return Math.max(-32768, Math.min(32767, Math.round(value)));
}
