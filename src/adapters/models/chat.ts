/**
 * The chat model behind any OpenAI-compatible `/v1/chat/completions` (OpenAI, Groq, vLLM, LocalAI,
 * llama.cpp's server, Ollama...), streamed: words are handed on as they arrive, tool calls once
 * their arguments are complete.
 */
import { Agent, type Dispatcher, request } from 'undici';
import type { ChatDelta, ChatMessage, ChatModel, ChatTool, ChatToolCall } from '../../voice/contracts.js';
import { ModelError } from './errors.js';
import { authHeaders, endpointUrl, RequestDeadline, requestFailure, throwStatus } from './http.js';

export interface OpenAiChatModelOptions {
  /** Base URL (…/v1) or the chat-completions URL itself. */
  url: string;
  apiKey?: string | null;
  model: string;
  /**
   * Milliseconds from sending the request to the first streamed event. Default 10 000: a hosted
   * model's first token takes 0.2 to 2 s; a local one loading its weights may take several.
   */
  firstTokenTimeoutMs?: number;
  /** Milliseconds allowed between two streamed events. Default 10 000. */
  idleTimeoutMs?: number;
  /** Sampling temperature; the server's default when unset. */
  temperature?: number;
  /** Upper bound of the reply's tokens; the server's default when unset. */
  maxTokens?: number;
}

interface StreamedToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface StreamChunk {
  choices?: Array<{
    delta?: { content?: string | null; tool_calls?: StreamedToolCall[] | null };
    finish_reason?: string | null;
  }>;
  error?: { message?: string };
}

/** A tool call being assembled from its pieces. */
interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Server-sent events from a byte stream: yields the `data` of each event (its data lines joined by
 * newlines, as the SSE spec says). Comments (`: ping`) and other fields are skipped; a final event
 * without its blank line is yielded too.
 */
export async function* serverSentData(body: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  let data: string[] = [];
  const lines = function* (final: boolean): Generator<string> {
    let at = buffered.search(/\r\n|\r|\n/);
    while (at >= 0) {
      const line = buffered.slice(0, at);
      const breakLength = buffered.startsWith('\r\n', at) ? 2 : 1;
      // A '\r' at the very end may be the first half of '\r\n': wait for the next chunk.
      if (!final && breakLength === 1 && buffered[at] === '\r' && at === buffered.length - 1) return;
      buffered = buffered.slice(at + breakLength);
      yield line;
      at = buffered.search(/\r\n|\r|\n/);
    }
  };
  const take = function* (line: string): Generator<string> {
    if (line === '') {
      if (data.length > 0) yield data.join('\n');
      data = [];
    } else if (line.startsWith('data:')) {
      data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
  };
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    for (const line of lines(false)) yield* take(line);
  }
  buffered += decoder.decode();
  for (const line of lines(true)) yield* take(line);
  if (buffered !== '') yield* take(buffered);
  yield* take('');
}

/** The chat port on an OpenAI-compatible server, streaming with `stream: true`. */
export class OpenAiChatModel implements ChatModel {
  readonly model: string;
  readonly #endpoint: string;
  readonly #http = new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 5_000 } });

  constructor(private readonly options: OpenAiChatModelOptions) {
    this.model = options.model;
    this.#endpoint = endpointUrl(options.url, '/chat/completions');
  }

  async *stream(input: {
    messages: ChatMessage[];
    tools?: ChatTool[];
    /** OpenAI's `tool_choice`: 'required' makes the model call a tool (`outdial doctor` asks it). */
    toolChoice?: 'auto' | 'required';
    signal?: AbortSignal;
  }): AsyncIterable<ChatDelta> {
    input.signal?.throwIfAborted();
    const firstTimeout = this.options.firstTokenTimeoutMs ?? 10_000;
    const idleTimeout = this.options.idleTimeoutMs ?? 10_000;
    const deadline = new RequestDeadline(input.signal, firstTimeout);
    let timeoutMs = firstTimeout;
    const body = JSON.stringify({
      model: this.model,
      messages: input.messages,
      stream: true,
      ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
      ...(input.toolChoice ? { tool_choice: input.toolChoice } : {}),
      ...(this.options.temperature !== undefined ? { temperature: this.options.temperature } : {}),
      ...(this.options.maxTokens !== undefined ? { max_tokens: this.options.maxTokens } : {}),
    });
    try {
      const response = await this.#post(body, deadline);
      const pending = new Map<number, PendingCall>();
      let finished = false;
      let yielded = 0;
      /** Complete calls: every one below `below` (a later index started), or all of them. */
      const complete = function* (below: number): Generator<ChatDelta> {
        for (const index of [...pending.keys()].sort((a, b) => a - b)) {
          if (index >= below) break;
          const call = pending.get(index);
          pending.delete(index);
          if (!call) continue;
          if (call.name === '') throw malformed(`tool call ${index} has no function name`);
          const done: ChatToolCall = {
            id: call.id || `call_${yielded}`,
            type: 'function',
            function: { name: call.name, arguments: call.arguments || '{}' },
          };
          yielded++;
          yield { type: 'tool_call', call: done };
        }
      };
      const malformed = (message: string) =>
        new ModelError('chat', 'malformed', `${this.#endpoint}: ${message}`);

      for await (const data of serverSentData(response.body)) {
        if (data.trim() === '[DONE]') {
          finished = true;
          break;
        }
        let chunk: StreamChunk;
        try {
          chunk = JSON.parse(data) as StreamChunk;
        } catch {
          throw malformed(`a streamed event is not JSON: ${data.slice(0, 120)}`);
        }
        if (chunk.error) throw malformed(`the stream reported an error: ${chunk.error.message ?? 'unknown'}`);
        const choice = chunk.choices?.[0];
        const out: ChatDelta[] = [];
        const text = choice?.delta?.content;
        if (typeof text === 'string' && text !== '') out.push({ type: 'text', text });
        for (const [position, piece] of (choice?.delta?.tool_calls ?? []).entries()) {
          const index = piece.index ?? position;
          out.push(...complete(index));
          const call = pending.get(index) ?? { id: '', name: '', arguments: '' };
          if (piece.id) call.id = piece.id;
          if (piece.function?.name) call.name = call.name === '' ? piece.function.name : call.name;
          if (piece.function?.arguments) call.arguments += piece.function.arguments;
          pending.set(index, call);
        }
        if (choice?.finish_reason) finished = true;
        // The deadline stops while the consumer holds a delta (it may be speaking a sentence):
        // only the server's silence counts.
        deadline.pause();
        yield* out;
        timeoutMs = idleTimeout;
        deadline.extend(idleTimeout);
      }
      if (!finished)
        throw new ModelError('chat', 'network', `${this.#endpoint}: the stream ended before the reply did`);
      deadline.pause();
      yield* complete(Number.POSITIVE_INFINITY);
    } catch (error) {
      throw requestFailure('chat', this.#endpoint, deadline, error, timeoutMs);
    } finally {
      // Also when the consumer stops early: the request is cancelled, the server sees it closed.
      deadline.cancel();
    }
  }

  /**
   * A dependency probe (ports.ts `DependencyProber`): a real streamed completion of one token.
   * Resolves at the first chunk with a choice, or `[DONE]`; rejects with a ModelError that names
   * the status, the network failure, or the `timeoutMs` (default 5000) that passed first.
   */
  async probe(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? 5000;
    const deadline = new RequestDeadline(undefined, timeoutMs);
    const body = JSON.stringify({
      model: this.model,
      messages: [{ role: 'user', content: 'Reply with OK.' }],
      max_tokens: 1,
      stream: true,
    });
    try {
      const response = await this.#post(body, deadline);
      for await (const data of serverSentData(response.body)) {
        if (data.trim() === '[DONE]') return;
        const chunk = parseChunk(data);
        if (!chunk) throw this.#malformed(`a streamed event is not JSON: ${data.slice(0, 120)}`);
        if (chunk.error)
          throw this.#malformed(`the stream reported an error: ${chunk.error.message ?? 'unknown'}`);
        if ((chunk.choices ?? []).length > 0) return;
      }
      throw new ModelError('chat', 'network', `${this.#endpoint}: the stream ended before its first chunk`);
    } catch (error) {
      throw requestFailure('chat', this.#endpoint, deadline, error, timeoutMs);
    } finally {
      deadline.cancel();
    }
  }

  /** POSTs a streamed request; an answer other than 2xx is thrown as a ModelError with its status. */
  async #post(body: string, deadline: RequestDeadline): Promise<Dispatcher.ResponseData> {
    const response = await request(this.#endpoint, {
      method: 'POST',
      body,
      dispatcher: this.#http,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...authHeaders(this.options.apiKey),
      },
      signal: deadline.signal,
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      await throwStatus('chat', this.#endpoint, response);
    }
    return response;
  }

  #malformed(message: string): ModelError {
    return new ModelError('chat', 'malformed', `${this.#endpoint}: ${message}`);
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

function parseChunk(data: string): StreamChunk | null {
  try {
    return JSON.parse(data) as StreamChunk;
  } catch {
    return null;
  }
}
