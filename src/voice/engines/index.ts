import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../../config.js';
import type { ConversationEngine } from '../contracts.js';
import type { LlmEngineOptions } from './llm.js';
import type { RealtimeEngineOptions } from './realtime.js';
import { ScriptedConversationEngine } from './scripted.js';

/** The names OUTDIAL_CONVERSATION_ENGINE takes besides a module path. */
export const ENGINE_NAMES = ['auto', 'scripted', 'llm', 'realtime', 'offline'] as const;

export interface EngineLoaderDeps {
  /** OUTDIAL_LLM_URL: with it, `auto` is the LLM engine. */
  llmUrl?: string | null | undefined;
  /** The options the LLM engine is built with (`createLlmEngine(options)` of ./llm.ts). */
  llm?: LlmEngineOptions;
  /** The realtime engine's server and options (OUTDIAL_REALTIME_*); without them, `realtime` is refused. */
  realtime?: RealtimeEngineOptions | null;
}

/**
 * The engine OUTDIAL_CONVERSATION_ENGINE names:
 * - `auto` (the default): `llm` when OUTDIAL_LLM_URL is set, else `scripted`;
 * - `scripted` (`offline`, its former name, is an alias): the fixed script, through the model ports;
 * - `llm`: the LLM engine (./llm.ts);
 * - `realtime`: the speech-to-speech engine (./realtime.ts) on OUTDIAL_REALTIME_URL;
 * - anything else: the path of an ES module whose default export is a ConversationEngine, or a
 *   function (possibly async) returning one.
 */
export async function loadConversationEngine(
  spec: string,
  deps: EngineLoaderDeps = {},
): Promise<ConversationEngine> {
  const name = spec.trim() === '' ? 'auto' : spec.trim();
  if (name === 'auto') return loadConversationEngine(deps.llmUrl ? 'llm' : 'scripted', deps);
  if (name === 'scripted' || name === 'offline') return new ScriptedConversationEngine();
  if (name === 'llm') {
    if (!deps.llmUrl) {
      throw new ConfigError('OUTDIAL_CONVERSATION_ENGINE=llm needs OUTDIAL_LLM_URL (and OUTDIAL_LLM_MODEL)');
    }
    // Loaded when chosen, so a start with another engine does not load it.
    const { createLlmEngine } = await import('./llm.js');
    return createLlmEngine(deps.llm ?? {});
  }
  if (name === 'realtime') {
    if (!deps.realtime) {
      throw new ConfigError(
        'OUTDIAL_CONVERSATION_ENGINE=realtime needs OUTDIAL_REALTIME_URL (a ws:// or wss:// Realtime API server)',
      );
    }
    const { createRealtimeEngine } = await import('./realtime.js');
    return createRealtimeEngine(deps.realtime);
  }
  return loadEngineModule(name);
}

async function loadEngineModule(spec: string): Promise<ConversationEngine> {
  const url = pathToFileURL(path.resolve(spec)).href;
  let loaded: unknown;
  try {
    loaded = ((await import(url)) as { default?: unknown }).default;
  } catch (error) {
    throw new ConfigError(`OUTDIAL_CONVERSATION_ENGINE: could not load ${spec}: ${(error as Error).message}`);
  }
  const engine = typeof loaded === 'function' ? await (loaded as () => unknown)() : loaded;
  if (!engine || typeof (engine as ConversationEngine).converse !== 'function') {
    throw new ConfigError(
      `OUTDIAL_CONVERSATION_ENGINE: ${spec} must export by default a conversation engine (an object with converse(session)) or a function that returns one`,
    );
  }
  return engine as ConversationEngine;
}
