/**
 * The outside services a call depends on (issue 24 §3, §4): each configured model endpoint and
 * each SIP trunk. Each has one circuit breaker, keyed as this file says, shared by every process
 * of a deployment. Pure: which dependencies a configuration and an agent have, and the names the
 * API, the dashboard and the metrics show.
 */
import type { EndedReason } from './agent-call.js';

export const DEPENDENCY_KINDS = ['llm', 'stt', 'tts', 'realtime', 'trunk'] as const;
export type DependencyKind = (typeof DEPENDENCY_KINDS)[number];

/** One dependency: `key` is the breaker's (`llm:<url>`, `trunk:<trunk id>`), `name` what a person reads. */
export interface Dependency {
  key: string;
  kind: DependencyKind;
  name: string;
}

/** A model endpoint as the configuration gives it. */
export interface EndpointConfig {
  url: string;
  model: string;
}

/** The model endpoints this deployment's calls use, as OUTDIAL_*_URL set them (null: none, or the offline tool). */
export interface ModelDependencies {
  llm: EndpointConfig | null;
  stt: EndpointConfig | null;
  tts: EndpointConfig | null;
  realtime: EndpointConfig | null;
}

/** The URL without credentials or query: two processes configured alike get the same key. */
function plainUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

export function modelDependency(
  kind: Exclude<DependencyKind, 'trunk'>,
  endpoint: EndpointConfig,
): Dependency {
  const url = plainUrl(endpoint.url);
  return { key: `${kind}:${url}`, kind, name: `${kind} ${endpoint.model} at ${url}` };
}

export function trunkDependency(trunk: { id: string; host?: string; port?: number }): Dependency {
  const where = trunk.host ? ` (${trunk.host}${trunk.port ? `:${trunk.port}` : ''})` : '';
  return { key: `trunk:${trunk.id}`, kind: 'trunk', name: `SIP trunk ${trunk.id}${where}` };
}

/** The kind of a breaker key ('llm:http://…' → 'llm'), or null for a key of no known kind. */
export function kindOfKey(key: string): DependencyKind | null {
  const kind = key.slice(0, key.indexOf(':'));
  return (DEPENDENCY_KINDS as readonly string[]).includes(kind) ? (kind as DependencyKind) : null;
}

/**
 * Which conversation engine holds the AI calls, as far as its dependencies go: `llm` (chat, then
 * the speech servers), `realtime` (one speech-to-speech server), `scripted` (the speech servers
 * only), or `custom` (a module of the operator's: its dependencies are unknown, none is assumed).
 */
export type EngineDependencyKind = 'llm' | 'realtime' | 'scripted' | 'custom';

/** The model dependencies of one AI call under an engine: what must answer for it to be served. */
export function engineDependencies(engine: EngineDependencyKind, models: ModelDependencies): Dependency[] {
  const out: Dependency[] = [];
  if (engine === 'realtime') {
    if (models.realtime) out.push(modelDependency('realtime', models.realtime));
    return out;
  }
  if (engine === 'custom') return out;
  if (engine === 'llm' && models.llm) out.push(modelDependency('llm', models.llm));
  if (models.stt) out.push(modelDependency('stt', models.stt));
  if (models.tts) out.push(modelDependency('tts', models.tts));
  return out;
}

/**
 * The dependency a call's service end points at, from its end reason: the model, speech server or
 * trunk it failed on. Null for a service end that no one dependency explains (a worker overloaded,
 * a process cut off) and for every other end.
 */
export function dependencyKindOfEnd(
  reason: EndedReason | string | null | undefined,
  engine: EngineDependencyKind,
): DependencyKind | null {
  switch (reason) {
    case 'model-unavailable':
      return engine === 'realtime' ? 'realtime' : 'llm';
    case 'stt-unavailable':
      return 'stt';
    case 'tts-unavailable':
      return 'tts';
    case 'trunk-unreachable':
    case 'trunk-rejected':
      return 'trunk';
    default:
      return null;
  }
}

/** The engine OUTDIAL_CONVERSATION_ENGINE names, as far as its dependencies go (see engines/index.ts). */
export function engineKindOf(spec: string, llmUrl: string | null | undefined): EngineDependencyKind {
  const name = spec.trim() === '' ? 'auto' : spec.trim();
  if (name === 'auto') return llmUrl ? 'llm' : 'scripted';
  if (name === 'offline' || name === 'scripted') return 'scripted';
  if (name === 'llm' || name === 'realtime') return name;
  return 'custom';
}

/** The end reason of an AI call that could not be served because a dependency of this kind is down. */
export function unavailableReason(kind: Exclude<DependencyKind, 'trunk'>): EndedReason {
  if (kind === 'stt') return 'stt-unavailable';
  if (kind === 'tts') return 'tts-unavailable';
  return 'model-unavailable';
}
