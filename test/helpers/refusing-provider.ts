import type { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import type { DialRequest, VoiceProvider } from '../../src/ports.js';

/**
 * A `wrapProvider` for startTestApp: the simulator behind a trunk that refuses one number, so
 * `dial` throws after the call was recorded (the provider-refused path of a single or batch dial).
 */
export function refusingDialsTo(
  refused: string,
  times = Number.POSITIVE_INFINITY,
): (simulator: SimulatedVoiceProvider) => VoiceProvider {
  let refusals = 0;
  return (simulator) =>
    new Proxy(simulator, {
      get(target, prop) {
        if (prop === 'dial') {
          return async (request: DialRequest) => {
            if (request.to === refused && refusals < times) {
              refusals++;
              throw new Error('trunk down');
            }
            return target.dial(request);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
}
