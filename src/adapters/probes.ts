/**
 * The `DependencyProber` port (ports.ts): one real, small question to each dependency a call has
 * (domain/dependencies.ts). Built once per runtime from the model endpoints and the trunk
 * directory; the circuit breakers' half-open probes, the health report and `outdial doctor` ask it.
 */
import type { Config } from '../config.js';
import { type Dependency, modelDependency } from '../domain/dependencies.js';
import type { DependencyProber, TrunkDirectory } from '../ports.js';
import { OpenAiChatModel } from './models/chat.js';
import { type ModelEndpoint, modelEndpoints } from './models/index.js';
import { probeRealtime } from './models/realtime.js';
import { OpenAiSpeechToText } from './models/stt.js';
import { OpenAiTextToSpeech } from './models/tts.js';
import { SipOptionsError, sipOptions } from './voice/sip/options.js';

/** How long one probe may take unless the caller says otherwise. */
export const DEFAULT_PROBE_TIMEOUT_MS = 5000;

/** The endpoints probed: those the configuration names (null: none, nothing to probe). */
export interface ProbeEndpoints {
  llm: ModelEndpoint | null;
  stt: ModelEndpoint | null;
  tts: ModelEndpoint | null;
  realtime: ModelEndpoint | null;
}

/** The four endpoints as the configuration gives them. */
export function probeEndpoints(
  config: Parameters<typeof modelEndpoints>[0] &
    Pick<Config, 'realtimeUrl' | 'realtimeApiKey' | 'realtimeModel'>,
): ProbeEndpoints {
  const realtime =
    config.realtimeUrl && config.realtimeModel
      ? { url: config.realtimeUrl, apiKey: config.realtimeApiKey ?? null, model: config.realtimeModel }
      : null;
  return { ...modelEndpoints(config), realtime };
}

/** A dependency the probes cannot ask: no endpoint or trunk of that key. */
export class UnknownDependencyError extends Error {
  override name = 'UnknownDependencyError';
}

/** One probe per dependency kind, each given the dependency and its timeout. */
type Probe = (dependency: Dependency, timeoutMs: number) => Promise<void>;

export class DependencyProbes implements DependencyProber {
  readonly #chat: OpenAiChatModel | null;
  readonly #stt: OpenAiSpeechToText | null;
  readonly #tts: OpenAiTextToSpeech | null;
  readonly #probes: Record<Dependency['kind'], Probe>;

  constructor(
    private readonly options: {
      endpoints: ProbeEndpoints;
      trunks: TrunkDirectory;
      /** The address shown to trunks in the OPTIONS' Via (OUTDIAL_SIP_PUBLIC_ADDRESS). */
      sipAddress?: string;
    },
  ) {
    const { llm, stt, tts } = options.endpoints;
    this.#chat = llm ? new OpenAiChatModel(llm) : null;
    this.#stt = stt ? new OpenAiSpeechToText(stt) : null;
    this.#tts = tts ? new OpenAiTextToSpeech(tts) : null;
    this.#probes = {
      llm: (dependency, timeoutMs) => this.#known(dependency, this.#chat).probe({ timeoutMs }),
      stt: (dependency, timeoutMs) => this.#known(dependency, this.#stt).probe({ timeoutMs }),
      tts: (dependency, timeoutMs) => this.#known(dependency, this.#tts).probe({ timeoutMs }),
      realtime: (dependency, timeoutMs) => this.#probeRealtime(dependency, timeoutMs),
      trunk: (dependency, timeoutMs) => this.#probeTrunk(dependency, timeoutMs),
    };
  }

  /**
   * Resolves when `dependency` answered; rejects with an Error saying what failed (an unknown key
   * with UnknownDependencyError). `timeoutMs` defaults to DEFAULT_PROBE_TIMEOUT_MS.
   */
  async probe(dependency: Dependency, options: { timeoutMs?: number } = {}): Promise<void> {
    const probe = this.#probes[dependency.kind];
    if (!probe) throw new UnknownDependencyError(`no probe for kind ${dependency.kind}`);
    await probe(dependency, options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS);
  }

  /** Ends the HTTP clients' kept-alive connections. */
  async close(): Promise<void> {
    await Promise.all([this.#chat?.close(), this.#stt?.close(), this.#tts?.close()]);
  }

  /** The client of `dependency`'s endpoint, when its key is the configured endpoint's. */
  #known<T>(dependency: Dependency, client: T | null): T {
    const kind = dependency.kind as Exclude<Dependency['kind'], 'trunk'>;
    const endpoint = this.options.endpoints[kind];
    if (!client || !endpoint || modelDependency(kind, endpoint).key !== dependency.key) {
      throw new UnknownDependencyError(`${dependency.key} is not a configured ${kind} endpoint`);
    }
    return client;
  }

  async #probeRealtime(dependency: Dependency, timeoutMs: number): Promise<void> {
    const endpoint = this.#known(dependency, this.options.endpoints.realtime);
    await probeRealtime(
      { url: endpoint.url, model: endpoint.model, ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}) },
      timeoutMs,
    );
  }

  /** OPTIONS to the trunk: any answer but a 5xx or 6xx (a 401, 404 or 405 is a trunk that is there). */
  async #probeTrunk(dependency: Dependency, timeoutMs: number): Promise<void> {
    const trunkId = dependency.key.slice('trunk:'.length);
    const trunk = await this.options.trunks.forDialing(trunkId);
    if (!trunk) throw new UnknownDependencyError(`${dependency.key}: no such SIP trunk`);
    const where = `SIP trunk ${trunk.id} (${trunk.host}:${trunk.port})`;
    const answer = await sipOptions(
      { host: trunk.host, port: trunk.port },
      { timeoutMs, ...(this.options.sipAddress ? { address: this.options.sipAddress } : {}) },
    ).catch((error: Error) => {
      throw new SipOptionsError(`${where}: ${error.message}`);
    });
    if (answer.status >= 500) {
      throw new Error(`${where} answered OPTIONS with ${answer.status} ${answer.reason}`.trim());
    }
  }
}
