/**
 * What an AI agent's call carries besides its transcript: why it ended, its turn latencies, the
 * tools it called, and the agent's AI settings read from basicDetails. Owner of the parsing and
 * validation: this module (validateAgentAi, agentAiSettings, fillVariables).
 */
import { Ajv } from 'ajv';
import { UNKNOWN_CONTACT_NAME } from './contacts.js';
import { strictPhone } from './phone.js';

/**
 * Why a call ended (the persistent view's `endedReason`): an answered call always has one; a call
 * nobody answered has one only when it failed on our side (a trunk down or refusing).
 */
/**
 * The end reasons that are ours (issue 24, domain/failure.ts): the call failed because something of
 * the service did, not the callee.
 */
export const SERVICE_ENDED_REASONS = [
  /** Anything else of ours: the engine itself, media we cannot speak, a process cut off. */
  'error',
  /** The chat model (or the realtime model) could not be reached, erred or was too slow. */
  'model-unavailable',
  /** Speech-to-text could not be reached, erred or was too slow. */
  'stt-unavailable',
  /** Text-to-speech could not be reached, erred or was too slow. */
  'tts-unavailable',
  /** The SIP trunk answered none of the INVITE's sends (docs/decisions.md: the bound). */
  'trunk-unreachable',
  /** The SIP trunk refused the call itself: 403, 404, a 5xx, or our credentials. */
  'trunk-rejected',
  /** The worker holding the call was past its load bound. */
  'overloaded',
] as const;

export const ENDED_REASONS = [
  'agent-ended',
  'callee-hung-up',
  'silence-timeout',
  'max-duration',
  'transferred',
  'voicemail',
  /** An operator hung up through POST /api/v1/call/hangup or the dashboard. */
  'operator-ended',
  ...SERVICE_ENDED_REASONS,
] as const;
export type EndedReason = (typeof ENDED_REASONS)[number];

/**
 * Whose failure an ended call was: the callee's side or ours. The vocabulary lives here beside the
 * end reasons; the rule that decides it is `failureSourceOf` in domain/failure.ts.
 */
export const FAILURE_SOURCES = ['contact', 'service'] as const;
export type FailureSource = (typeof FAILURE_SOURCES)[number];

/** One agent turn's latency, in ms (null: that stage did not run, e.g. no STT on a text call). */
export interface TurnMetrics {
  /** End of the callee's speech on the wire to the end-of-turn decision. */
  endpointingMs: number | null;
  sttMs: number | null;
  /** Request sent to the model's first token. */
  llmFirstTokenMs: number | null;
  /** First sentence sent to text-to-speech to its first audio byte. */
  ttsFirstByteMs: number | null;
  /** End of the callee's speech on the wire to the agent's first audio packet on the wire. */
  voiceToVoiceMs: number | null;
}

/** A tool the model called during the call (kept in a list on the call, not in the transcript). */
export interface ToolCallRecord {
  name: string;
  arguments: Record<string, unknown>;
  /** What the tool answered (JSON), or null. */
  result: unknown;
  error: string | null;
  /** ISO time it was called. */
  at: string;
  durationMs: number;
}

/** An HTTP tool of the agent: outdial POSTs `{name, arguments, callId}` to `url`, signed like webhooks. */
export interface HttpTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  url: string;
}

/** The AI agent settings from basicDetails, with defaults, {{variables}} already filled in. */
export interface AgentTools {
  instructions: string | null;
  firstMessage: string | null;
  voicemailMessage: string | null;
  transferNumber: string | null;
  tools: HttpTool[];
  interruption: { minSpeechMs: number; ignoreWords: string[] };
  silence: { repromptMs: number; hangupMs: number };
  maxDurationSeconds: number | null;
}

/** Names of the tools every AI agent has; an HTTP tool may not take one of them. */
export const BUILT_IN_TOOLS = ['end_call', 'transfer_call', 'send_dtmf', 'leave_voicemail'] as const;

/**
 * Words a callee says over the agent to show they are listening, not to take the turn: an
 * utterance made only of these does not interrupt the agent. "yes" and "no" are left out on
 * purpose: said over a question they are the answer (docs/decisions.md).
 */
export const DEFAULT_IGNORE_WORDS = [
  'yeah',
  'yep',
  'uh-huh',
  'uh huh',
  'mm-hmm',
  'mhm',
  'hmm',
  'okay',
  'ok',
  'right',
  'sure',
  'alright',
  'all right',
  'got it',
  'i see',
  'cool',
];

/** The tuning an agent gets when its basicDetails leave it out. */
export const AGENT_AI_DEFAULTS = {
  minSpeechMs: 300,
  repromptMs: 8_000,
  hangupMs: 20_000,
} as const;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value : null;

const wholeNumber = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;

/**
 * The placeholder `{{ name }}`: any characters but braces between double braces, white space
 * around the name ignored (so a batch metadata key with a space in it can be named).
 */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Fills `{{name}}` placeholders from `variables`; an unknown name becomes the empty string. */
export function fillVariables(template: string, variables: Record<string, string>): string {
  return template.replace(PLACEHOLDER, (_whole, name: string) =>
    Object.hasOwn(variables, name) ? (variables[name] ?? '') : '',
  );
}

/** A metadata value as a {{variable}} reads it: strings as given, null as empty, others as JSON. */
function variableText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The contact fields a dial's {{variables}} are built from. */
export interface VariableContact {
  name: string;
  phoneNumber: string;
  company?: string | null;
}

/**
 * The values for an agent's {{variables}} on one dial. Built from, each later source winning on a
 * clash: the contact (`name`, `contactName`, `firstName`, `company`, `phoneNumber`), every key of
 * the contact's `metadata`, then the dial body's `variables` (the most specific, given for this
 * very call). A contact without a name (stored as 'Unknown') gives empty name variables.
 */
export function dialVariables(
  contact: VariableContact,
  metadata: Record<string, unknown> | null | undefined,
  variables: Record<string, string> | null | undefined,
): Record<string, string> {
  // A contact stored without a name has the spec's default 'Unknown': for the agent, no name.
  const given = contact.name.trim();
  const name = given === UNKNOWN_CONTACT_NAME ? '' : given;
  const out: Record<string, string> = {
    name,
    contactName: name,
    firstName: name.split(/\s+/)[0] ?? '',
    company: contact.company ?? '',
    phoneNumber: contact.phoneNumber,
  };
  for (const [key, value] of Object.entries(metadata ?? {})) out[key] = variableText(value);
  for (const [key, value] of Object.entries(variables ?? {})) out[key] = variableText(value);
  return out;
}

function httpTools(value: unknown): HttpTool[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((tool): HttpTool[] => {
    if (!isRecord(tool) || typeof tool.name !== 'string' || typeof tool.url !== 'string') return [];
    return [
      {
        name: tool.name,
        description: typeof tool.description === 'string' ? tool.description : '',
        parameters: isRecord(tool.parameters) ? tool.parameters : { type: 'object', properties: {} },
        url: tool.url,
      },
    ];
  });
}

/**
 * The AI settings of an agent from its stored basicDetails, defaults filled in and {{variables}}
 * filled into `instructions`, `firstMessage` and `voicemailMessage`. Lenient: a key of the wrong
 * type (an agent stored before these settings existed) reads as absent.
 */
export function agentAiSettings(
  details: Record<string, unknown>,
  variables: Record<string, string> = {},
): AgentTools {
  const filled = (value: unknown): string | null => {
    const template = text(value);
    return template === null ? null : fillVariables(template, variables);
  };
  const interruption = isRecord(details.interruption) ? details.interruption : {};
  const silence = isRecord(details.silence) ? details.silence : {};
  const ignoreWords = Array.isArray(interruption.ignoreWords)
    ? interruption.ignoreWords.filter((word): word is string => typeof word === 'string')
    : [...DEFAULT_IGNORE_WORDS];
  const maxDuration = wholeNumber(details.maxDurationSeconds);
  return {
    instructions: filled(details.instructions),
    firstMessage: filled(details.firstMessage),
    voicemailMessage: filled(details.voicemailMessage),
    transferNumber: text(details.transferNumber)?.trim() ?? null,
    tools: httpTools(details.tools),
    interruption: {
      minSpeechMs: wholeNumber(interruption.minSpeechMs) ?? AGENT_AI_DEFAULTS.minSpeechMs,
      ignoreWords,
    },
    silence: {
      repromptMs: wholeNumber(silence.repromptMs) ?? AGENT_AI_DEFAULTS.repromptMs,
      hangupMs: wholeNumber(silence.hangupMs) ?? AGENT_AI_DEFAULTS.hangupMs,
    },
    maxDurationSeconds: maxDuration !== null && maxDuration > 0 ? maxDuration : null,
  };
}

/** A call's voice-to-voice latency over its turns (null when no turn measured it). */
export interface LatencySummary {
  /** Turns with a voice-to-voice figure. */
  turns: number;
  voiceToVoiceP50Ms: number;
  voiceToVoiceP95Ms: number;
}

/** What every view of a stored call shows of its agent side (persistent view, get-metric, webhook). */
export interface AgentCallFields {
  endedReason: EndedReason | null;
  /** Whose failure the call was (domain/failure.ts); null while it is up and when it did not fail. */
  failureSource: FailureSource | null;
  turns: TurnMetrics[];
  toolCalls: ToolCallRecord[];
  latency: LatencySummary | null;
}

/** The nearest-rank percentile of ascending `sorted` (non-empty). */
function percentile(sorted: number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1] as number;
}

/** p50 and p95 (nearest rank) of the turns' voice-to-voice figures. */
export function latencySummary(turns: TurnMetrics[]): LatencySummary | null {
  const figures = turns
    .map((turn) => turn.voiceToVoiceMs)
    .filter((ms): ms is number => typeof ms === 'number' && Number.isFinite(ms))
    .sort((a, b) => a - b);
  if (figures.length === 0) return null;
  return {
    turns: figures.length,
    voiceToVoiceP50Ms: percentile(figures, 50),
    voiceToVoiceP95Ms: percentile(figures, 95),
  };
}

/** The agent side of a stored call from its columns (null columns: a call without an AI agent). */
export function agentCallFields(row: {
  ended_reason: EndedReason | null;
  failure_source: FailureSource | null;
  turns: TurnMetrics[] | null;
  tool_calls: ToolCallRecord[] | null;
}): AgentCallFields {
  const turns = row.turns ?? [];
  return {
    endedReason: row.ended_reason,
    failureSource: row.failure_source,
    turns,
    toolCalls: row.tool_calls ?? [],
    latency: latencySummary(turns),
  };
}

/** Bounds of the AI settings an agent may be given (the admin API's schema states them too). */
export const AGENT_AI_LIMITS = {
  instructionsChars: 20_000,
  messageChars: 2_000,
  tools: 20,
  toolParametersChars: 16_384,
  ignoreWords: 200,
  minSpeechMs: { min: 0, max: 5_000 },
  /** 0: never; otherwise at least `min`. */
  repromptMs: { min: 1_000, max: 300_000 },
  /** 0: never; otherwise at least `min`. */
  hangupMs: { min: 1_000, max: 600_000 },
  maxDurationSeconds: { min: 10, max: 14_400 },
} as const;

/** A SIP URI a transfer may name instead of a number: `sip:` or `sips:`, a user part and a host. */
export const SIP_URI = /^sips?:[^\s@<>"]+@[A-Za-z0-9.-]+(:\d{1,5})?(;[^\s<>"]*)?$/;

/**
 * Where a transfer may go (an agent's transferNumber, an operator's POST /api/v1/call/transfer):
 * an E.164 number (normalised) or a SIP URI (as given); null for anything else.
 */
export function transferTarget(raw: string): string | null {
  const to = raw.trim();
  if (SIP_URI.test(to)) return to;
  return strictPhone(to);
}

/**
 * The rules on an agent's AI settings that a JSON Schema of the request cannot state (the schema
 * checks types and bounds first): tool names unique and not a built-in tool's, tool parameters a
 * JSON Schema of an object that compiles, `transferNumber` an E.164 number or a SIP URI, and the
 * silence times 0 (never) or at least a second, the hang-up after the reprompt. Returns field errors by path (`basicDetails.tools.1.name`),
 * empty when the settings are good.
 */
export function validateAgentAi(details: Record<string, unknown>): Record<string, string[]> {
  const errors = new Map<string, string[]>();
  const fail = (field: string, message: string) => {
    const path = `basicDetails.${field}`;
    errors.set(path, [...(errors.get(path) ?? []), message]);
  };
  if (typeof details.transferNumber === 'string') {
    const to = details.transferNumber.trim();
    if (transferTarget(to) === null) {
      fail(
        'transferNumber',
        'must be an E.164 number such as +14155550123 or a SIP URI such as sip:desk@pbx.example.com',
      );
    }
  }
  if (Array.isArray(details.tools)) {
    const seen = new Set<string>();
    details.tools.forEach((tool: unknown, index) => {
      if (!isRecord(tool)) return;
      if (typeof tool.name === 'string') {
        if ((BUILT_IN_TOOLS as readonly string[]).includes(tool.name)) {
          fail(
            `tools.${index}.name`,
            `"${tool.name}" is a built-in tool (${BUILT_IN_TOOLS.join(', ')}); choose another name`,
          );
        } else if (seen.has(tool.name)) {
          fail(`tools.${index}.name`, `duplicate tool name "${tool.name}"`);
        }
        seen.add(tool.name);
      }
      if (isRecord(tool.parameters)) {
        const problem = schemaProblem(tool.parameters);
        if (problem) fail(`tools.${index}.parameters`, problem);
      }
    });
  }
  const silence = isRecord(details.silence) ? details.silence : null;
  if (silence) {
    const reprompt = wholeNumber(silence.repromptMs) ?? AGENT_AI_DEFAULTS.repromptMs;
    const hangup = wholeNumber(silence.hangupMs) ?? AGENT_AI_DEFAULTS.hangupMs;
    for (const [field, value] of [
      ['repromptMs', reprompt],
      ['hangupMs', hangup],
    ] as const) {
      const min = AGENT_AI_LIMITS[field].min;
      if (value > 0 && value < min) fail(`silence.${field}`, `must be 0 (never) or at least ${min} ms`);
    }
    if (reprompt > 0 && hangup > 0 && hangup <= reprompt) {
      fail(
        'silence.hangupMs',
        `must be longer than repromptMs (${reprompt} ms), or 0 (never): the reprompt comes first`,
      );
    }
  }
  return Object.fromEntries(errors);
}

/** Why `schema` is not a usable JSON Schema for a tool's arguments, or null when it is. */
function schemaProblem(schema: Record<string, unknown>): string | null {
  if (JSON.stringify(schema).length > AGENT_AI_LIMITS.toolParametersChars) {
    return `must be at most ${AGENT_AI_LIMITS.toolParametersChars} characters of JSON`;
  }
  if (schema.type !== 'object')
    return 'must be a JSON Schema with "type": "object" (the arguments are an object)';
  // A checker per schema: compiled schemas stay in an Ajv's cache, and an `$id` may be used once.
  // `$schema` is left out: models read the schema whatever draft it names, and Ajv would refuse
  // a draft it was not set up for (2020-12) as an unknown meta-schema.
  const checker = new Ajv({ strict: false });
  const { $schema: _draft, ...body } = schema;
  try {
    if (!checker.validateSchema(body)) {
      return `is not a valid JSON Schema: ${checker.errorsText(checker.errors, { dataVar: 'parameters' })}`;
    }
    checker.compile(body);
  } catch (error) {
    return `is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`;
  }
  return null;
}
