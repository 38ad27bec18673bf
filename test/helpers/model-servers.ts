/**
 * Local model servers for tests: an OpenAI-compatible chat-completions server that streams
 * scripted replies and tool calls with set delays, a `/v1/audio/transcriptions` server that
 * transcribes with pocketsphinx, and a `/v1/audio/speech` server that speaks with espeak-ng. They
 * speak the same protocols as OpenAI, Groq, speaches or Kokoro-FastAPI, so the real HTTP clients
 * run against them. Each listens on 127.0.0.1 at a free port, answers under `/v1/...` and under
 * the bare path, records what it received, and can be told to fail, hang or go down.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { transcribe } from '../../src/adapters/speech/pocketsphinx.js';
import { PHONE_RATE } from '../../src/voice/audio/pcm.js';
import { resample } from '../../src/voice/audio/resample.js';
import { decodeWav, encodeWav } from '../../src/voice/audio/wav.js';
import type { ChatMessage, ChatTool } from '../../src/voice/contracts.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Faults every server can be told to show, for all requests or (chat) for one reply. */
export interface ServerFaults {
  /** Answer every request with this HTTP status and an OpenAI-style error body. */
  fail?: number;
  /** Take the request and never answer (the client's timeout or abort must end it). */
  hang?: boolean;
}

interface Listening {
  server: http.Server;
  url: string;
  /** Stops listening and drops open connections (not counted as aborted by clients). */
  stop(): Promise<void>;
}

/** Responses the server cut off itself (a scripted drop, closing): not counted as aborted by the client. */
const cutByServer = new WeakSet<http.ServerResponse>();

function cut(res: http.ServerResponse): void {
  cutByServer.add(res);
  res.destroy();
}

/** Listens on 127.0.0.1 at `port` (default a free one); `url` is the base URL ending in /v1. */
async function listen(handler: http.RequestListener, port = 0): Promise<Listening> {
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const stop = async () => {
    if (!server.listening) return;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const res of open) cut(res);
    server.closeAllConnections();
    await closed;
  };
  return { server, url: `http://127.0.0.1:${bound}/v1`, stop };
}

/** The path without the query and without a leading /v1, e.g. '/chat/completions'. */
function route(req: http.IncomingMessage): string {
  const pathname = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
  return pathname.startsWith('/v1/') ? pathname.slice(3) : pathname;
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendError(res: http.ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    cut(res);
    return;
  }
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(
      JSON.stringify({ error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error' } }),
    );
}

/** True when the client closed the connection before the whole answer went out. */
function watchAbort(res: http.ServerResponse, onAbort: () => void): void {
  res.on('close', () => {
    if (!res.writableFinished && !cutByServer.has(res)) onAbort();
  });
}

// ---------------------------------------------------------------------------------------------
// Chat completions

/** A tool call the scripted model makes; `arguments` as a JSON string or an object (stringified). */
export interface ScriptedToolCall {
  name: string;
  arguments?: string | Record<string, unknown>;
  /** Default: call_<request number>_<index>. */
  id?: string;
}

/** One scripted answer: text, tool calls or both (text first, as models do), or a fault. */
export interface ChatReply extends ServerFaults {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Overrides the server's delay before the first chunk for this reply. */
  firstTokenMs?: number;
  /** Overrides the server's delay between chunks for this reply. */
  chunkDelayMs?: number;
  /** Streams the first chunk, then a line that is not JSON, then ends. */
  malformed?: boolean;
  /** Streams the first chunk, then closes the connection without finish_reason or [DONE]. */
  drop?: boolean;
}

export interface ChatRequestRecord {
  /** Path as received, e.g. '/v1/chat/completions'. */
  path: string;
  headers: http.IncomingHttpHeaders;
  model: string;
  messages: ChatMessage[];
  tools: ChatTool[] | undefined;
  stream: boolean;
  /** The whole JSON body. */
  body: Record<string, unknown>;
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
}

export type ChatResponder = (
  request: ChatRequestRecord,
) => string | ChatReply | undefined | Promise<string | ChatReply | undefined>;

export interface ChatServerOptions extends ServerFaults {
  /** Answers in order, one per request; when they run out, `respond` answers. */
  replies?: Array<string | ChatReply>;
  /** Answers from the request (what the user said, say). Default: 'OK.' */
  respond?: ChatResponder;
  /** Milliseconds from the request to the first chunk (the first token). Default 0. */
  firstTokenMs?: number;
  /** Milliseconds between chunks. Default 0. */
  chunkDelayMs?: number;
  /** Words per text chunk (models stream a word or two at a time). Default 1. */
  wordsPerChunk?: number;
  /** Characters per piece of a tool call's arguments. Default 8. */
  argumentChunkChars?: number;
  /** The port to listen on (a server started again where it was, after close()); default a free one. */
  port?: number;
}

export interface ChatServer {
  /** Base URL ending in /v1 (the server also answers without /v1). */
  readonly url: string;
  readonly requests: ChatRequestRecord[];
  /** Requests whose connection the client closed before the answer was complete. */
  readonly aborted: number;
  /** Queues more replies. */
  push(...replies: Array<string | ChatReply>): void;
  /** Changes delays, faults or the responder for the next requests. */
  set(options: Partial<ChatServerOptions>): void;
  /** The last user message of request `index` (default the last request). */
  lastUserText(index?: number): string | undefined;
  /** Stops listening and drops open connections: the server is down from now on. */
  close(): Promise<void>;
}

/** Text cut into chunks of `words` words each, spaces kept, so the pieces join to the text. */
function textChunks(text: string, words: number): string[] {
  const tokens = text.match(/\S+\s*|\s+/g) ?? [];
  const chunks: string[] = [];
  for (let i = 0; i < tokens.length; i += words) chunks.push(tokens.slice(i, i + words).join(''));
  return chunks;
}

function piecesOf(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

export async function startChatServer(initial: ChatServerOptions = {}): Promise<ChatServer> {
  const options: ChatServerOptions = { ...initial };
  const queue: Array<string | ChatReply> = [...(initial.replies ?? [])];
  const requests: ChatRequestRecord[] = [];
  let aborted = 0;
  let sequence = 0;

  const { url, stop } = await listen((req, res) => {
    void handle(req, res).catch((error: unknown) => sendError(res, 500, String(error)));
  }, initial.port);

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST' || route(req) !== '/chat/completions') {
      sendError(res, 404, `no route ${req.method} ${req.url}`);
      return;
    }
    const raw = await readBody(req);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      sendError(res, 400, 'the body is not JSON');
      return;
    }
    const record: ChatRequestRecord = {
      path: req.url ?? '',
      headers: req.headers,
      model: String(body.model ?? ''),
      messages: (body.messages ?? []) as ChatMessage[],
      tools: body.tools as ChatTool[] | undefined,
      stream: body.stream === true,
      body,
      aborted: false,
    };
    requests.push(record);
    const number = ++sequence;
    watchAbort(res, () => {
      record.aborted = true;
      aborted++;
    });

    const next = queue.shift() ?? (await (options.respond ?? (() => 'OK.'))(record)) ?? 'OK.';
    const reply: ChatReply = typeof next === 'string' ? { text: next } : next;
    const fail = reply.fail ?? options.fail;
    if (reply.hang ?? options.hang) return;
    await sleep(reply.firstTokenMs ?? options.firstTokenMs ?? 0);
    if (res.destroyed) return;
    if (fail !== undefined) {
      sendError(res, fail, `scripted failure ${fail}`);
      return;
    }
    const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
      id: call.id ?? `call_${number}_${index}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    }));
    const id = `chatcmpl-${number}`;
    const created = Math.floor(Date.now() / 1000);
    const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';

    if (!record.stream) {
      const message = {
        role: 'assistant',
        content: reply.text ?? null,
        ...(toolCalls.length > 0
          ? {
              tool_calls: toolCalls.map((call) => ({
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: record.model,
          choices: [{ index: 0, message, finish_reason: finishReason }],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        }),
      );
      return;
    }

    const chunkDelay = reply.chunkDelayMs ?? options.chunkDelayMs ?? 0;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: record.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    const deltas: Array<Record<string, unknown>> = [{ role: 'assistant', content: '' }];
    for (const text of textChunks(reply.text ?? '', options.wordsPerChunk ?? 1))
      deltas.push({ content: text });
    toolCalls.forEach((call, index) => {
      deltas.push({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      });
      for (const piece of piecesOf(call.arguments, options.argumentChunkChars ?? 8)) {
        deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] });
      }
    });

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    // The role chunk and the first words go out together: that is the first token.
    const [first, ...rest] = deltas;
    res.write(chunk(first ?? {}));
    if (reply.malformed) {
      res.end('data: {"choices":[{"delta":{"content":"unfinished\n\n');
      return;
    }
    if (reply.drop) {
      // Long enough for the headers and the first chunk to reach the client first.
      await sleep(50);
      cut(res);
      return;
    }
    for (const [index, delta] of rest.entries()) {
      if (index > 0 && chunkDelay > 0) await sleep(chunkDelay);
      if (res.destroyed) return;
      res.write(chunk(delta));
    }
    if (chunkDelay > 0) await sleep(chunkDelay);
    if (res.destroyed) return;
    res.write(chunk({}, finishReason));
    res.end('data: [DONE]\n\n');
  }

  return {
    url,
    requests,
    get aborted() {
      return aborted;
    },
    push: (...replies) => {
      queue.push(...replies);
    },
    set: (changes) => {
      Object.assign(options, changes);
    },
    lastUserText: (index = requests.length - 1) => {
      const messages = requests[index]?.messages ?? [];
      const user = messages.filter((message) => message.role === 'user').at(-1);
      return typeof user?.content === 'string' ? user.content : undefined;
    },
    close: stop,
  };
}

// ---------------------------------------------------------------------------------------------
// Speech to text

export interface SttServerOptions extends ServerFaults {
  /**
   * Milliseconds from the whole request to the answer, pocketsphinx's own time included (it takes
   * 1 to 2 s for a turn: give `text` too for an exact delay). Default 0.
   */
  delayMs?: number;
  /** Answers 200 with this body as it is (not the protocol: a malformed answer). */
  raw?: string;
  /** Answers with this text instead of transcribing (a provider that knows the language, say). */
  text?: string | ((request: SttRequestRecord) => string);
}

export interface SttRequestRecord {
  path: string;
  headers: http.IncomingHttpHeaders;
  model: string | undefined;
  language: string | undefined;
  responseFormat: string | undefined;
  /** The uploaded file's name and type, and its audio decoded from WAV. */
  fileName: string | undefined;
  fileType: string | undefined;
  sampleRate: number;
  samples: number;
  /** The uploaded audio, at `sampleRate`. */
  audio: Int16Array;
  /** What the server answered ('' before the answer). */
  text: string;
  aborted: boolean;
}

export interface SttServer {
  readonly url: string;
  readonly requests: SttRequestRecord[];
  readonly aborted: number;
  set(options: Partial<SttServerOptions>): void;
  close(): Promise<void>;
}

export async function startSttServer(initial: SttServerOptions = {}): Promise<SttServer> {
  const options: SttServerOptions = { ...initial };
  const requests: SttRequestRecord[] = [];
  let aborted = 0;

  const { url, stop } = await listen((req, res) => {
    void handle(req, res).catch((error: unknown) => sendError(res, 500, String(error)));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST' || route(req) !== '/audio/transcriptions') {
      sendError(res, 404, `no route ${req.method} ${req.url}`);
      return;
    }
    const started = Date.now();
    const raw = await readBody(req);
    let form: FormData;
    try {
      form = await new Response(raw, {
        headers: { 'content-type': req.headers['content-type'] ?? '' },
      }).formData();
    } catch {
      sendError(res, 400, 'the body is not multipart/form-data');
      return;
    }
    const field = (name: string) => {
      const value = form.get(name);
      return typeof value === 'string' ? value : undefined;
    };
    const file = form.get('file');
    if (!(file instanceof Blob)) {
      sendError(res, 400, 'file is required');
      return;
    }
    let audio: { rate: number; samples: Int16Array };
    try {
      audio = decodeWav(Buffer.from(await file.arrayBuffer()));
    } catch (error) {
      sendError(res, 400, `file: ${error instanceof Error ? error.message : error}`);
      return;
    }
    const record: SttRequestRecord = {
      path: req.url ?? '',
      headers: req.headers,
      model: field('model'),
      language: field('language'),
      responseFormat: field('response_format'),
      fileName: file instanceof File ? file.name : undefined,
      fileType: file.type || undefined,
      sampleRate: audio.rate,
      samples: audio.samples.length,
      audio: audio.samples,
      text: '',
      aborted: false,
    };
    requests.push(record);
    watchAbort(res, () => {
      record.aborted = true;
      aborted++;
    });
    if (options.hang) return;
    if (options.fail !== undefined) {
      await sleep(options.delayMs ?? 0);
      sendError(res, options.fail, `scripted failure ${options.fail}`);
      return;
    }
    if (options.raw !== undefined) {
      res.writeHead(200, { 'content-type': 'text/html' }).end(options.raw);
      return;
    }
    const scripted = typeof options.text === 'function' ? options.text(record) : options.text;
    // pocketsphinx's own timeout is made generous: tests share a busy machine.
    const text =
      scripted ?? (await transcribe(resample(audio.samples, audio.rate, PHONE_RATE), { timeoutMs: 120_000 }));
    record.text = text;
    await sleep(Math.max(0, (options.delayMs ?? 0) - (Date.now() - started)));
    if (res.destroyed) return;
    const format = record.responseFormat ?? 'json';
    if (format === 'text' || format === 'srt' || format === 'vtt') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
      return;
    }
    const seconds = audio.samples.length / audio.rate;
    const answer =
      format === 'verbose_json'
        ? { task: 'transcribe', language: record.language ?? 'en', duration: seconds, text, segments: [] }
        : { text };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  return {
    url,
    requests,
    get aborted() {
      return aborted;
    },
    set: (changes) => {
      Object.assign(options, changes);
    },
    close: stop,
  };
}

// ---------------------------------------------------------------------------------------------
// Text to speech

/** OpenAI's speech endpoint answers `pcm` and `wav` at 24 kHz. */
export const TTS_RATE = 24_000;

export interface TtsServerOptions extends ServerFaults {
  /**
   * Milliseconds from the request to the first byte of audio, espeak-ng's own time included (tens
   * of ms for a sentence, nothing for one it has spoken before: its results are cached). Default 0.
   */
  firstByteMs?: number;
  /** Bytes per streamed chunk. Default 4801: odd, so that chunks split samples as real servers' do. */
  chunkBytes?: number;
  /** Milliseconds between chunks. Default 0. */
  chunkDelayMs?: number;
  /** The response formats served (others get a 400, as Groq answers pcm). Default pcm and wav. */
  formats?: Array<'pcm' | 'wav'>;
  /** The content-type sent instead of audio/pcm or audio/wav (a server that answers mp3, say). */
  contentType?: string;
  /** Sample rate of the audio sent. Default 24 000, as OpenAI. */
  rate?: number;
  /** espeak-ng voice for a requested voice name; default: the name itself when espeak-ng has it, else en-us. */
  espeakVoice?: (voice: string) => string;
}

export interface TtsRequestRecord {
  path: string;
  headers: http.IncomingHttpHeaders;
  model: string | undefined;
  input: string;
  voice: string | undefined;
  speed: number | undefined;
  responseFormat: string | undefined;
  body: Record<string, unknown>;
  aborted: boolean;
}

export interface TtsServer {
  readonly url: string;
  readonly requests: TtsRequestRecord[];
  readonly aborted: number;
  set(options: Partial<TtsServerOptions>): void;
  close(): Promise<void>;
}

/** A few espeak-ng voice names, enough for tests that ask for one by name. */
const ESPEAK_NAME = /^(en-us|en-gb|en|hi|ta|te|bn|kn|ml|mr|gu|pa|or|ar|fr|de|es)(\+[a-z0-9]+)?$/;

export async function startTtsServer(initial: TtsServerOptions = {}): Promise<TtsServer> {
  const options: TtsServerOptions = { ...initial };
  const requests: TtsRequestRecord[] = [];
  let aborted = 0;

  const { url, stop } = await listen((req, res) => {
    void handle(req, res).catch((error: unknown) => sendError(res, 500, String(error)));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST' || route(req) !== '/audio/speech') {
      sendError(res, 404, `no route ${req.method} ${req.url}`);
      return;
    }
    const started = Date.now();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse((await readBody(req)).toString('utf8')) as Record<string, unknown>;
    } catch {
      sendError(res, 400, 'the body is not JSON');
      return;
    }
    const record: TtsRequestRecord = {
      path: req.url ?? '',
      headers: req.headers,
      model: typeof body.model === 'string' ? body.model : undefined,
      input: typeof body.input === 'string' ? body.input : '',
      voice: typeof body.voice === 'string' ? body.voice : undefined,
      speed: typeof body.speed === 'number' ? body.speed : undefined,
      responseFormat: typeof body.response_format === 'string' ? body.response_format : undefined,
      body,
      aborted: false,
    };
    requests.push(record);
    watchAbort(res, () => {
      record.aborted = true;
      aborted++;
    });
    if (options.hang) return;
    const format = record.responseFormat ?? 'mp3';
    if (options.fail !== undefined) {
      await sleep(options.firstByteMs ?? 0);
      sendError(res, options.fail, `scripted failure ${options.fail}`);
      return;
    }
    if (record.input === '') {
      sendError(res, 400, 'input is required');
      return;
    }
    if ((format !== 'pcm' && format !== 'wav') || !(options.formats ?? ['pcm', 'wav']).includes(format)) {
      sendError(res, 400, `response_format ${format} is not served here (pcm or wav)`);
      return;
    }
    const requested = record.voice ?? 'en-us';
    const voice = options.espeakVoice?.(requested) ?? (ESPEAK_NAME.test(requested) ? requested : 'en-us');
    const speed = Math.min(4, Math.max(0.25, record.speed ?? 1));
    const wordsPerMinute = Math.round(Math.min(450, Math.max(80, 160 * speed)));
    const rate = options.rate ?? TTS_RATE;
    const pcm = resample(await synthesize(record.input, { voice, wordsPerMinute }), PHONE_RATE, rate);
    const bytes = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    const payload = format === 'wav' ? encodeWav(pcm, rate) : bytes;
    await sleep(Math.max(0, (options.firstByteMs ?? 0) - (Date.now() - started)));
    if (res.destroyed) return;
    res.writeHead(200, {
      'content-type': options.contentType ?? (format === 'wav' ? 'audio/wav' : 'audio/pcm'),
      'transfer-encoding': 'chunked',
    });
    const size = Math.max(1, options.chunkBytes ?? 4801);
    for (let at = 0; at < payload.length; at += size) {
      if (at > 0 && (options.chunkDelayMs ?? 0) > 0) await sleep(options.chunkDelayMs ?? 0);
      if (res.destroyed) return;
      const more = res.write(payload.subarray(at, at + size));
      if (!more) {
        // Whichever comes first; the other listener goes too (they would pile up over a long answer).
        await new Promise<void>((resolve) => {
          const go = () => {
            res.off('drain', go);
            res.off('close', go);
            resolve();
          };
          res.once('drain', go);
          res.once('close', go);
        });
      }
    }
    res.end();
  }

  return {
    url,
    requests,
    get aborted() {
      return aborted;
    },
    set: (changes) => {
      Object.assign(options, changes);
    },
    close: stop,
  };
}

/** A base URL where nothing listens (a server that is down): a port taken and released. */
export async function downUrl(): Promise<string> {
  const { url, stop } = await listen((_req, res) => res.end());
  await stop();
  return url;
}

export interface ModelServers {
  chat: ChatServer;
  stt: SttServer;
  tts: TtsServer;
  /** OUTDIAL_LLM_*, OUTDIAL_STT_* and OUTDIAL_TTS_* pointing at the three, for a child process. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** The three servers at once (each with its own options), and the environment that points outdial at them. */
export async function startModelServers(
  options: { chat?: ChatServerOptions; stt?: SttServerOptions; tts?: TtsServerOptions } = {},
): Promise<ModelServers> {
  const [chat, stt, tts] = await Promise.all([
    startChatServer(options.chat),
    startSttServer(options.stt),
    startTtsServer(options.tts),
  ]);
  return {
    chat,
    stt,
    tts,
    env: {
      OUTDIAL_LLM_URL: chat.url,
      OUTDIAL_LLM_MODEL: 'test-llm',
      OUTDIAL_LLM_API_KEY: 'sk-test-llm',
      OUTDIAL_STT_URL: stt.url,
      OUTDIAL_STT_MODEL: 'test-stt',
      OUTDIAL_STT_API_KEY: 'sk-test-stt',
      OUTDIAL_TTS_URL: tts.url,
      OUTDIAL_TTS_MODEL: 'test-tts',
      OUTDIAL_TTS_API_KEY: 'sk-test-tts',
      // pocketsphinx behind the STT server took 10.6 s beside two CPU hogs, past the default 10 s:
      // the limit here only bounds a failure, never decides a test's outcome.
      OUTDIAL_MODEL_TIMEOUT_MS: '60000',
    },
    close: async () => {
      await Promise.all([chat.close(), stt.close(), tts.close()]);
    },
  };
}

/**
 * The environment of an app whose simulated calls are AI conversations in text through `chat`
 * (the simulator's persona answers through the same server): ringing kept short, and a model
 * timeout that only bounds a failure on a busy machine, never decides a test.
 */
export function simulatedAiEnv(chat: ChatServer): Record<string, string> {
  return {
    OUTDIAL_LLM_URL: chat.url,
    OUTDIAL_LLM_MODEL: 'test-model',
    OUTDIAL_SIM_RING_MS: '30',
    OUTDIAL_MODEL_TIMEOUT_MS: '60000',
  };
}

/** Whether a chat request is the simulator's persona (the callee), not the agent. */
export function isPersona(record: ChatRequestRecord): boolean {
  return String(record.messages[0]?.content ?? '').includes('answering your phone');
}

/**
 * A chat server for simulated AI calls whose agent side can be taken down: the persona (the
 * callee) keeps answering; the agent's requests, and a breaker's probes, get `status` while
 * `setDown(true)` holds. Up, the agent says goodbye at its first turn.
 */
export async function startOutageChat(
  status = 503,
): Promise<{ chat: ChatServer; setDown(down: boolean): void }> {
  let down = false;
  const chat = await startChatServer({
    respond: (record) => {
      if (isPersona(record)) return 'Sure, what is it about?';
      if (down) return { fail: status };
      return 'Thank you for your time. Goodbye!';
    },
  });
  return {
    chat,
    setDown: (value) => {
      down = value;
    },
  };
}
