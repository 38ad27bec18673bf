/**
 * The model ports of this process, built once in main.ts from the configuration: hosted or local
 * OpenAI-compatible servers where their URLs are set, the offline fallbacks where not.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { ModelDependencies } from '../../domain/dependencies.js';
import type { VoiceModels } from '../../voice/contracts.js';
import { OpenAiChatModel } from './chat.js';
import { OpenAiSpeechToText, PocketsphinxSpeechToText } from './stt.js';
import { EspeakTextToSpeech, OpenAiTextToSpeech } from './tts.js';
import { createSpeechDetector } from './vad.js';

/** An OpenAI-compatible server: its base URL (…/v1), key and model. */
export interface ModelEndpoint {
  url: string;
  apiKey?: string | null;
  model: string;
}

export interface BuildVoiceModelsOptions {
  /** OUTDIAL_LLM_*; null: no chat model (the LLM engine is not available). */
  llm: ModelEndpoint | null;
  /** OUTDIAL_STT_*; null: pocketsphinx. */
  stt: ModelEndpoint | null;
  /** OUTDIAL_TTS_*; null: espeak-ng. */
  tts: ModelEndpoint | null;
  /**
   * OUTDIAL_MODEL_TIMEOUT_MS: how long each server may take to start answering, and may pause
   * while it streams. Default 10 000.
   */
  timeoutMs?: number;
  logger?: Logger;
}

/** The three endpoints as the configuration gives them (null where a URL is not set). */
export function modelEndpoints(
  config: Pick<
    Config,
    | 'llmUrl'
    | 'llmApiKey'
    | 'llmModel'
    | 'sttUrl'
    | 'sttApiKey'
    | 'sttModel'
    | 'ttsUrl'
    | 'ttsApiKey'
    | 'ttsModel'
  >,
): Pick<BuildVoiceModelsOptions, 'llm' | 'stt' | 'tts'> {
  const endpoint = (url: string | undefined, apiKey: string | undefined, model: string | undefined) =>
    url && model ? { url, apiKey: apiKey ?? null, model } : null;
  return {
    llm: endpoint(config.llmUrl, config.llmApiKey, config.llmModel),
    stt: endpoint(config.sttUrl, config.sttApiKey, config.sttModel),
    tts: endpoint(config.ttsUrl, config.ttsApiKey, config.ttsModel),
  };
}

/** The ports, and `close()` for shutdown (it ends the HTTP clients' kept-alive connections). */
export interface BuiltVoiceModels extends VoiceModels {
  close(): Promise<void>;
}

export function buildVoiceModels(options: BuildVoiceModelsOptions): BuiltVoiceModels {
  const wait = options.timeoutMs;
  const chat = options.llm
    ? new OpenAiChatModel({
        ...options.llm,
        ...(wait !== undefined ? { firstTokenTimeoutMs: wait, idleTimeoutMs: wait } : {}),
      })
    : null;
  const stt = options.stt
    ? new OpenAiSpeechToText({ ...options.stt, ...(wait !== undefined ? { timeoutMs: wait } : {}) })
    : new PocketsphinxSpeechToText();
  const tts = options.tts
    ? new OpenAiTextToSpeech({
        ...options.tts,
        ...(wait !== undefined ? { firstByteTimeoutMs: wait, idleTimeoutMs: wait } : {}),
      })
    : new EspeakTextToSpeech();
  options.logger?.info(
    { chat: chat ? `openai:${chat.model}` : null, stt: stt.name, tts: tts.name },
    'voice models',
  );
  return {
    chat,
    stt,
    tts,
    // Silero loads on the first call's detector, not at start: a process without AI calls never pays for it.
    detector: (detectorOptions) => createSpeechDetector(detectorOptions, options.logger),
    close: async () => {
      await Promise.all(
        [chat, stt, tts].map((port) =>
          port && 'close' in port && typeof port.close === 'function' ? port.close() : undefined,
        ),
      );
    },
  };
}

/** The endpoints as dependencies with breakers (domain/dependencies.ts): the three above and the realtime server. */
export function modelDependencies(
  config: Parameters<typeof modelEndpoints>[0] & Pick<Config, 'realtimeUrl' | 'realtimeModel'>,
): ModelDependencies {
  const { llm, stt, tts } = modelEndpoints(config);
  return {
    llm,
    stt,
    tts,
    realtime:
      config.realtimeUrl && config.realtimeModel
        ? { url: config.realtimeUrl, model: config.realtimeModel }
        : null,
  };
}
