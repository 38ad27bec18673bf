import { type TSchema, Type } from '@sinclair/typebox';
import {
  AGENT_AI_DEFAULTS,
  AGENT_AI_LIMITS,
  BUILT_IN_TOOLS,
  ENDED_REASONS,
  type EndedReason,
} from '../../domain/agent-call.js';
import { CALL_CHANNELS, CALL_STATUSES, type CallChannel, type CallStatus } from '../../domain/call.js';
import { FAILURE_SOURCES, type FailureSource } from '../../domain/failure.js';

/** An id in a query string or path: bounded so that a megabyte of garbage never reaches SQL. */
export const Id = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    details: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { $id: 'ErrorBody', description: "The spec's error body" },
);

/** Responses every authenticated endpoint may give, besides its own. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const descriptions: Record<number, string> = {
    400: 'Validation failed or a parameter is missing',
    401: 'Invalid or missing API key',
    402: 'Insufficient call minutes',
    403: 'Access denied',
    404: 'Resource not found',
    408: 'The request was not received in time',
    409: 'Conflict',
    413: 'Body too large',
    414: 'A path parameter is longer than 100 characters',
    415: 'The body is not application/json',
    422: 'The Idempotency-Key was used with another body (code IDEMPOTENCY_KEY_REUSED)',
    429: 'Too many calls in progress for this user (code CONCURRENCY_LIMIT)',
    431: 'Request line and headers over 16 KB',
    500: 'Unexpected failure',
    502: 'Voice provider failure',
    503: 'A dependency is down',
    504: 'The process holding the call did not answer in time (code LIVE_CALL_TIMEOUT)',
  };
  const out: Record<number, TSchema> = {};
  for (const status of statuses)
    out[status] = Type.Ref(ErrorBody, { description: descriptions[status] ?? '' });
  return out;
}

/** The same responses for an /admin/v1 endpoint, whose 401 is about the admin token. */
export function adminErrorResponses(...statuses: number[]): Record<number, TSchema> {
  const out = errorResponses(...statuses);
  if (out[401]) out[401] = Type.Ref(ErrorBody, { description: 'Invalid or missing admin token' });
  return out;
}

/**
 * The response headers of a paged list, as paging.ts's linkNextPage sends them: both only when
 * there is a next page, so a client stops at the first page without them.
 */
export const PagingHeaders = {
  Link: Type.String({
    description:
      'The next page\'s address, `<path?query&cursor=...>; rel="next"` (RFC 8288); absent on the last page',
  }),
  'x-next-cursor': Type.String({
    description: 'The `cursor` of the next page (opaque); absent on the last page',
  }),
};

/** A list answered a page at a time: the items, with the paging headers declared in the document. */
export const PagedList = <T extends TSchema>(items: T, description: string) =>
  Type.Array(items, { description, headers: PagingHeaders });

export const CallChannelSchema = Type.Unsafe<CallChannel>({
  type: 'string',
  enum: [...CALL_CHANNELS],
  description:
    "How the callee was reached: 'phone' (a number dialed through the simulator or a SIP trunk) or 'web' (the dashboard's Talk to this agent: a browser's microphone; its phoneNumber is 'web')",
});

export const CallStatusSchema = Type.Unsafe<CallStatus>({
  type: 'string',
  enum: [...CALL_STATUSES],
  description: 'ONGOING while the call is up; one of the final states after',
});

export const TranscriptEntrySchema = Type.Object({
  role: Type.Union([Type.Literal('assistant'), Type.Literal('user')]),
  content: Type.String(),
});

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const DateTime = Type.String({ format: 'date-time' });

export const BasicDetailsSchema = Type.Object(
  {
    dialId: Type.Optional(Type.String({ maxLength: 200 })),
    voiceId: Type.Optional(Type.String({ maxLength: 200 })),
    agent_name: Type.Optional(Type.String({ maxLength: 200 })),
    voiceSpeed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
    voiceGender: Type.Optional(Type.String({ maxLength: 50 })),
    agentLanguage: Type.Optional(Type.String({ maxLength: 35 })),
  },
  {
    additionalProperties: true,
    description:
      'Voice configuration and the AI agent settings (instructions, firstMessage, voicemailMessage, transferNumber, tools, interruption, silence, maxDurationSeconds: see docs/agents.md); other keys are kept as given',
  },
);

const L = AGENT_AI_LIMITS;

/** An HTTP tool of an agent: outdial POSTs `{name, arguments, callId}` to its url, signed like webhooks. */
export const HttpToolSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[a-zA-Z0-9_-]{1,64}$',
      description: `Letters, digits, _ and -, at most 64; not a built-in tool's (${BUILT_IN_TOOLS.join(', ')}), unique`,
    }),
    description: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'What the tool does, for the model',
    }),
    parameters: Type.Object(
      {},
      {
        additionalProperties: true,
        description: `JSON Schema of the arguments, with "type": "object" (at most ${L.toolParametersChars} characters)`,
      },
    ),
    url: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }),
  },
  { additionalProperties: false },
);

/**
 * basicDetails as an agent is created or changed with: the voice configuration and the AI agent
 * settings, bounded. The rules a schema cannot state are domain/agent-call.ts's validateAgentAi.
 */
export const BasicDetailsInputSchema = Type.Composite(
  [
    BasicDetailsSchema,
    Type.Object({
      instructions: Type.Optional(
        Type.String({
          maxLength: L.instructionsChars,
          description: 'The system prompt; takes {{variables}} (docs/agents.md)',
        }),
      ),
      firstMessage: Type.Optional(
        Type.String({
          maxLength: L.messageChars,
          description: 'What the agent says first once a person answers; takes {{variables}}',
        }),
      ),
      voicemailMessage: Type.Optional(
        Type.String({
          maxLength: L.messageChars,
          description:
            'Left after the beep when a machine answers (else the call hangs up); takes {{variables}}',
        }),
      ),
      transferNumber: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 256,
          description: 'Where transfer_call sends the callee: an E.164 number or a sip:/sips: URI',
        }),
      ),
      tools: Type.Optional(Type.Array(HttpToolSchema, { maxItems: L.tools })),
      interruption: Type.Optional(
        Type.Object(
          {
            minSpeechMs: Type.Optional(
              Type.Integer({
                minimum: L.minSpeechMs.min,
                maximum: L.minSpeechMs.max,
                description: `How long the callee must speak over the agent to stop it (default ${AGENT_AI_DEFAULTS.minSpeechMs})`,
              }),
            ),
            ignoreWords: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
                maxItems: L.ignoreWords,
                description:
                  'Backchannels that never interrupt the agent (default: yeah, uh-huh, mm-hmm, okay, ...)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
      ),
      silence: Type.Optional(
        Type.Object(
          {
            repromptMs: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: L.repromptMs.max,
                description: `Callee silence before the agent asks whether they are still there; 0: never, else at least ${L.repromptMs.min} (default ${AGENT_AI_DEFAULTS.repromptMs})`,
              }),
            ),
            hangupMs: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: L.hangupMs.max,
                description: `Callee silence in all (the reprompt does not restart it) before the agent hangs up, longer than repromptMs; 0: never, else at least ${L.hangupMs.min} (default ${AGENT_AI_DEFAULTS.hangupMs})`,
              }),
            ),
          },
          { additionalProperties: false },
        ),
      ),
      maxDurationSeconds: Type.Optional(
        Nullable(
          Type.Integer({
            minimum: L.maxDurationSeconds.min,
            maximum: L.maxDurationSeconds.max,
            description: 'The longest an answered call may last; null: no limit',
          }),
        ),
      ),
    }),
  ],
  {
    additionalProperties: true,
    description: 'Voice configuration and AI agent settings; other keys are kept as given',
  },
);

export const CustomMetricSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
    type: Type.Union([
      Type.Literal('boolean'),
      Type.Literal('number'),
      Type.Literal('string'),
      Type.Literal('enum'),
    ]),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const MetricConfigSchema = Type.Object(
  {
    enabled: Type.Boolean(),
    customMetrics: Type.Array(CustomMetricSchema, { maxItems: 50 }),
  },
  { additionalProperties: false },
);

export const AgentSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    createdAt: DateTime,
    updatedAt: DateTime,
    type: Type.Union([Type.Literal('OUTBOUND'), Type.Literal('INBOUND')]),
    isActive: Type.Boolean(),
    basicDetails: BasicDetailsSchema,
    metricConfig: MetricConfigSchema,
    sipTrunkId: Nullable(Type.String()),
  },
  { $id: 'Agent' },
);

export const LiveCallStatusSchema = Type.Object(
  {
    callId: Type.String(),
    status: CallStatusSchema,
    startTime: DateTime,
    phoneNumber: Type.String(),
    contactId: Type.String(),
    batchId: Nullable(Type.String()),
    error: Nullable(Type.String()),
    duration: Nullable(Type.Number({ description: 'Seconds; null while the call is ongoing' })),
    recordingUrl: Nullable(Type.String()),
  },
  { $id: 'LiveCallStatus' },
);

const Ms = (description: string) => Nullable(Type.Number({ minimum: 0, description }));

export const TurnMetricsSchema = Type.Object(
  {
    endpointingMs: Ms("End of the callee's speech on the wire to the end-of-turn decision"),
    sttMs: Ms('Speech-to-text time of the turn'),
    llmFirstTokenMs: Ms("Request sent to the model to the model's first token"),
    ttsFirstByteMs: Ms('First sentence sent to text-to-speech to its first audio byte'),
    voiceToVoiceMs: Ms(
      "End of the callee's speech on the wire to the agent's first audio packet on the wire",
    ),
  },
  { description: 'One agent turn, in ms; null when that stage did not run' },
);

export const ToolCallSchema = Type.Object(
  {
    name: Type.String(),
    arguments: Type.Object({}, { additionalProperties: true }),
    result: Type.Unknown({ description: 'What the tool answered (JSON), or null' }),
    error: Nullable(Type.String()),
    at: DateTime,
    durationMs: Type.Number({ minimum: 0 }),
  },
  { description: 'A tool the model called (built-in or HTTP)' },
);

/** The agent side of a stored call: the persistent view, get-metric and the call webhook carry it. */
export const AgentCallFieldsSchema = {
  endedReason: Nullable(
    Type.Unsafe<EndedReason>({
      type: 'string',
      enum: [...ENDED_REASONS],
      description:
        'Why the call ended (docs/agents.md): always for an answered call; for one nobody answered only a failure of ours (trunk-unreachable, trunk-rejected); null otherwise and while ongoing',
    }),
  ),
  failureSource: Nullable(
    Type.Unsafe<FailureSource>({
      type: 'string',
      enum: [...FAILURE_SOURCES],
      description:
        'Whose failure the call was: contact (busy, no answer, a number refused, voicemail, hung up) or service (a model, speech server or trunk down, a worker overloaded, a process cut off: not charged, and a batch contact keeps its attempt); null when it did not fail or while ongoing',
    }),
  ),
  turns: Type.Array(TurnMetricsSchema, { description: 'Per agent turn latencies, in order' }),
  toolCalls: Type.Array(ToolCallSchema, {
    description: 'The tools the model called, in order (not in the transcription)',
  }),
  latency: Nullable(
    Type.Object(
      {
        turns: Type.Integer({ description: 'Turns with a voice-to-voice figure' }),
        voiceToVoiceP50Ms: Type.Number(),
        voiceToVoiceP95Ms: Type.Number(),
      },
      { description: "The call's voice-to-voice p50 and p95 (nearest rank); null without a measured turn" },
    ),
  ),
};

/**
 * The spec's ended call with its analysis ("the service"): the call of get-metric, and with
 * batchId and recordingUrl the call of the onCallComplete webhook.
 */
export const AnalysedCallFields = {
  id: Type.String(),
  contactId: Type.String(),
  agentId: Type.String(),
  status: CallStatusSchema,
  startTime: DateTime,
  endTime: Nullable(DateTime),
  duration: Nullable(Type.Number()),
  phoneNumber: Type.String(),
  contactName: Type.String(),
  transcription: Type.Array(TranscriptEntrySchema),
  summary: Nullable(Type.String({ description: 'Null until the analysis has run' })),
  metricJson: Nullable(Type.Object({}, { additionalProperties: true })),
  ...AgentCallFieldsSchema,
};

/** The JSON Schema of an analysed call's metricJson. */
export const MetricSchemaField = Type.Object(
  {},
  { additionalProperties: true, description: 'JSON Schema of metricJson' },
);
