import type { TranscriptEntry } from './call.js';

/** What the contact wanted, as the analysis reads it. */
export const INTENTS = [
  'interested',
  'not_interested',
  'callback_requested',
  'wrong_number',
  'do_not_call',
  'voicemail',
  'other',
] as const;
export type Intent = (typeof INTENTS)[number];

export const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
export type Sentiment = (typeof SENTIMENTS)[number];

/** An agent's custom metric (metricConfig.customMetrics[]). */
export interface CustomMetric {
  name: string;
  type: 'boolean' | 'number' | 'string' | 'enum';
  description?: string;
  options?: string[];
}

export interface MetricConfig {
  enabled: boolean;
  customMetrics: CustomMetric[];
}

/** `metricJson`: the standard metrics, and the agent's custom metrics when its config is enabled. */
export interface MetricJson {
  intent: Intent;
  sentiment: Sentiment;
  confidence: number;
  keyPoints: string[];
  customerSatisfaction: number;
  [custom: string]: unknown;
}

export interface AnalysisInput {
  transcription: TranscriptEntry[];
  metricConfig: MetricConfig;
  /** The call's final status when known (a VOICEMAIL status settles the intent). */
  callStatus?: string;
}

export interface Analysis {
  summary: string;
  metricJson: MetricJson;
  /** How many of the agent's custom metrics were evaluated. */
  customMetricsProcessed: number;
  /** Which analyzer produced it: `local`, or `llm` (the model's name). */
  analyzer: string;
}

/** Analyzer port: the offline one by default, an OpenAI-compatible LLM when configured. */
export interface Analyzer {
  readonly name: string;
  analyze(input: AnalysisInput): Promise<Analysis>;
}

/** An agent's stored metric_config as a MetricConfig (missing parts default to off and none). */
export function toMetricConfig(stored: Record<string, unknown> | null | undefined): MetricConfig {
  const config = (stored ?? {}) as Partial<MetricConfig>;
  return {
    enabled: config.enabled === true,
    customMetrics: Array.isArray(config.customMetrics) ? config.customMetrics : [],
  };
}

/** The custom metrics that count for an agent: none unless its metricConfig is enabled. */
export function activeCustomMetrics(config: MetricConfig): CustomMetric[] {
  return config.enabled ? config.customMetrics : [];
}

type JsonSchema = Record<string, unknown>;

function customMetricSchema(metric: CustomMetric): JsonSchema {
  const description = metric.description ? { description: metric.description } : {};
  switch (metric.type) {
    case 'boolean':
      return { type: ['boolean', 'null'], ...description };
    case 'number':
      return { type: ['number', 'null'], ...description };
    case 'string':
      return { type: ['string', 'null'], maxLength: 1000, ...description };
    case 'enum':
      return { enum: [...(metric.options ?? []), null], ...description };
  }
}

/**
 * The JSON Schema of an agent's `metricJson` (draft 2020-12): the five standard metrics, always,
 * and each custom metric when the agent's metricConfig is enabled (null when the call did not
 * tell). This is the `metricSchema` of replies and webhooks, and what an LLM's answer is held to.
 */
export function metricSchemaFor(config: MetricConfig): JsonSchema {
  const custom = activeCustomMetrics(config);
  const properties: Record<string, JsonSchema> = {
    intent: { enum: [...INTENTS], description: 'What the contact wanted' },
    sentiment: { enum: [...SENTIMENTS], description: "The contact's overall feeling" },
    confidence: { type: 'number', minimum: 0, maximum: 1, description: 'Confidence in the intent' },
    keyPoints: {
      type: 'array',
      items: { type: 'string', maxLength: 300 },
      maxItems: 10,
      description: 'What the contact said that matters, in short',
    },
    customerSatisfaction: { type: 'integer', minimum: 1, maximum: 5, description: '1 (very unhappy) to 5' },
  };
  for (const metric of custom) properties[metric.name] = customMetricSchema(metric);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  };
}

/** The transcription as the analyzers read it: roles kept, blank turns dropped. */
export function cleanTranscript(transcription: TranscriptEntry[]): TranscriptEntry[] {
  return transcription
    .filter((entry) => typeof entry.content === 'string' && entry.content.trim() !== '')
    .map((entry) => ({ role: entry.role, content: entry.content.trim() }));
}
