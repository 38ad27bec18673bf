import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import {
  type Analysis,
  type AnalysisInput,
  type Analyzer,
  activeCustomMetrics,
  cleanTranscript,
  type MetricJson,
  metricSchemaFor,
} from '../../domain/analysis.js';
import { endpointUrl } from '../models/http.js';

export interface LlmAnalyzerOptions {
  /** An OpenAI-compatible server: its base URL (…/v1) or its chat-completions URL. */
  url: string;
  apiKey?: string;
  model: string;
  /** Used when the server fails: the call is still analysed, offline. */
  fallback: Analyzer;
  logger: Logger;
  /** Milliseconds one request may take in all. */
  timeoutMs?: number;
  /** Further tries after a failed one (a 429, a 5xx, a network error, an answer that does not fit). */
  retries?: number;
  /** Milliseconds before the first retry; doubled each time. */
  backoffMs?: number;
}

const SYSTEM_PROMPT = [
  'You analyse the transcription of an outbound phone call placed by an AI agent (role "assistant") to a contact (role "user").',
  'Answer with one JSON object and nothing else: {"summary": string, "metricJson": object}.',
  'summary: two or three plain sentences on what the contact said, wanted and agreed to, for the sales or support team.',
  'metricJson must validate against the JSON Schema given as "metricJsonSchema". intent is what the contact wanted:',
  'interested (wants to proceed or learn more), not_interested (declines), callback_requested (asks to be called at another time),',
  'wrong_number (not the intended person), do_not_call (asks never to be called again; this wins over the others),',
  'voicemail (a machine or greeting answered), other. confidence is your confidence in the intent, 0 to 1.',
  'keyPoints are short facts the team needs (dates, amounts, objections, commitments). customerSatisfaction is 1 (very unhappy) to 5.',
  'Use null for a custom metric the call does not tell.',
].join(' ');

class AttemptError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/**
 * Post-call analysis by a large language model behind any OpenAI-compatible chat-completions API.
 * The answer is held to the agent's metric schema; a request that fails or an answer that does
 * not fit is tried again, and when the server cannot give a valid answer the local analyzer does
 * the work, with the reason logged: a call is never left without its summary because a model is
 * down.
 */
export class LlmAnalyzer implements Analyzer {
  readonly name = 'llm';
  private readonly endpoint: string;
  private readonly ajv = new Ajv2020({ allErrors: false, strict: false });
  private readonly http = new Agent({ keepAliveTimeout: 30_000 });

  constructor(private readonly options: LlmAnalyzerOptions) {
    this.endpoint = endpointUrl(options.url, '/chat/completions');
  }

  async analyze(input: AnalysisInput): Promise<Analysis> {
    try {
      return await this.ask(input);
    } catch (error) {
      this.options.logger.warn(
        { reason: error instanceof Error ? error.message : String(error), model: this.options.model },
        'LLM analysis failed; the local analyzer analysed the call instead',
      );
      return this.options.fallback.analyze(input);
    }
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  private async ask(input: AnalysisInput): Promise<Analysis> {
    const metricSchema = metricSchemaFor(input.metricConfig);
    const { $schema: _ignored, ...metricJsonSchema } = metricSchema;
    const validate = this.ajv.compile({
      type: 'object',
      properties: {
        summary: { type: 'string', minLength: 1, maxLength: 4000 },
        metricJson: metricJsonSchema,
      },
      required: ['summary', 'metricJson'],
      additionalProperties: false,
    });
    const body = JSON.stringify({
      model: this.options.model,
      temperature: 0,
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        {
          role: 'user',
          content: JSON.stringify({
            callStatus: input.callStatus ?? null,
            metricJsonSchema,
            transcription: cleanTranscript(input.transcription),
          }),
        },
      ],
    });
    const retries = this.options.retries ?? 2;
    let lastError: AttemptError = new AttemptError('no attempt made', false);
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep((this.options.backoffMs ?? 500) * 2 ** (attempt - 1));
      try {
        const answer = await this.post(body);
        if (!validate(answer)) {
          const problem = validate.errors?.[0];
          throw new AttemptError(
            `the answer does not fit the schema: ${problem?.instancePath || '/'} ${problem?.message ?? ''}`.trim(),
            true,
          );
        }
        const { summary, metricJson } = answer as { summary: string; metricJson: MetricJson };
        return {
          summary,
          metricJson,
          customMetricsProcessed: activeCustomMetrics(input.metricConfig).length,
          analyzer: `llm:${this.options.model}`,
        };
      } catch (error) {
        lastError = error instanceof AttemptError ? error : new AttemptError(describe(error), true);
        if (!lastError.retryable) break;
      }
    }
    throw lastError;
  }

  /** One chat-completions request; returns the JSON object the model answered with. */
  private async post(body: string): Promise<unknown> {
    const timeoutMs = this.options.timeoutMs ?? 20_000;
    const response = await request(this.endpoint, {
      method: 'POST',
      body,
      dispatcher: this.http,
      headers: {
        'content-type': 'application/json',
        ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.body.text();
    if (response.statusCode === 429 || response.statusCode >= 500) {
      throw new AttemptError(`the server answered ${response.statusCode}`, true);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new AttemptError(`the server answered ${response.statusCode}: ${text.slice(0, 200)}`, false);
    }
    let content: unknown;
    try {
      content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]
        ?.message?.content;
    } catch {
      throw new AttemptError('the server did not answer JSON', true);
    }
    if (typeof content !== 'string') throw new AttemptError('the answer has no message content', true);
    // Some models wrap JSON in a fenced block even when asked not to.
    const unfenced = content.replace(/^\s*```(?:json)?\s*/i, '').replace(/\s*```\s*$/, '');
    try {
      return JSON.parse(unfenced);
    } catch {
      throw new AttemptError('the model did not answer with JSON', true);
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function describe(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError')
      return 'the server did not answer in time';
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}
