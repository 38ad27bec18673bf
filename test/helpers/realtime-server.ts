/**
 * A local OpenAI Realtime API server for tests (what the chat server of model-servers.ts is to the
 * LLM engine): a WebSocket on 127.0.0.1 that speaks the protocol's events. It takes session.update,
 * buffers the audio appended (24 kHz PCM16), decides where the callee's speech starts and stops
 * from the audio's own energy (its clock is the audio received, never the wall clock), transcribes
 * a turn with `transcribe()`, and answers each reply asked for (response.create, or the end of a
 * turn with server VAD) with the next scripted reply: espeak-ng speech as audio deltas and its
 * transcript, function calls, or a fault. It records every client event.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { resample } from '../../src/voice/audio/resample.js';

const RATE = 24_000;
/** Energy analysis window: 20 ms of audio. */
const WINDOW = RATE / 50;
/** RMS above this is speech (espeak-ng speaks at several thousand; line silence is 0). */
const SPEECH_RMS = 500;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface RealtimeToolCall {
  name: string;
  arguments?: Record<string, unknown>;
}

/** One scripted reply: words spoken (espeak-ng), function calls after them, or a fault. */
export interface RealtimeReply {
  text?: string;
  toolCalls?: RealtimeToolCall[];
  /** Audio per delta, in ms (default 200). */
  chunkMs?: number;
  /** Wait between deltas, in ms (default 0: all at once, faster than real time as OpenAI sends). */
  paceMs?: number;
  /** Sends an `error` event with this message instead of a reply. */
  error?: string;
  /** Sends the first audio delta, then closes the socket without a close frame. */
  drop?: boolean;
  /** Sends the first audio delta, then a message that is not JSON. */
  malformed?: boolean;
  /** Takes the request and never answers. */
  hang?: boolean;
  /**
   * Ends the reply with `response.done` whose status is `failed` and this error message (as the
   * API does when a response fails after it began: a server error, a content filter).
   */
  failed?: string;
}

export interface RealtimeServerOptions {
  /** The callee's words for a finished turn (like the STT test server's `text`). Default ''. */
  transcribe?: () => string;
  /** Refuse the WebSocket upgrade with this HTTP status. */
  refuse?: number;
  /** Take the connection and never send session.created, nor anything else (a server that hangs). */
  silent?: boolean;
}

export interface RealtimeServer {
  /** ws://127.0.0.1:<port>/v1 */
  url: string;
  /** The upgrade request of each connection: its path with the query, and its headers. */
  connections: Array<{ url: string; headers: http.IncomingHttpHeaders }>;
  /** Every client event received, in order (input_audio_buffer.append included). */
  events: Array<Record<string, unknown>>;
  /** Events of one type. */
  received(type: string): Array<Record<string, unknown>>;
  /** Queues scripted replies, used in order. */
  push(...replies: Array<string | RealtimeReply>): void;
  close(): Promise<void>;
}

export async function startRealtimeServer(options: RealtimeServerOptions = {}): Promise<RealtimeServer> {
  const queue: RealtimeReply[] = [];
  const connections: RealtimeServer['connections'] = [];
  const events: RealtimeServer['events'] = [];
  const server = http.createServer((_req, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    connections.push({ url: req.url ?? '', headers: req.headers });
    if (options.refuse) {
      socket.end(`HTTP/1.1 ${options.refuse} Refused\r\nConnection: close\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (!options.silent) new Session(ws, queue, events, options).start();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/v1`,
    connections,
    events,
    received: (type) => events.filter((event) => event.type === type),
    push: (...replies) => {
      for (const reply of replies) queue.push(typeof reply === 'string' ? { text: reply } : reply);
    },
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One connection: a call's model session. */
class Session {
  private silenceMs = 500;
  private createResponse = true;
  private pending = new Int16Array(0);
  /** Ms of audio received, and where the current speech started (null: none). */
  private audioMs = 0;
  private speechFrom: number | null = null;
  private lastVoiceMs = 0;
  private counter = 0;
  private userItem = '';
  /** The reply being sent: cancelled by response.cancel. */
  private current: { id: string; cancelled: boolean } | null = null;
  /** Replies are made one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly ws: WebSocket,
    private readonly queue: RealtimeReply[],
    private readonly events: Array<Record<string, unknown>>,
    private readonly options: RealtimeServerOptions,
  ) {}

  start(): void {
    this.send({ type: 'session.created', session: { id: 'sess_1' } });
    this.ws.on('message', (data) => {
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(data.toString()) as Record<string, unknown>;
      } catch {
        this.send({ type: 'error', error: { type: 'invalid_request_error', message: 'not JSON' } });
        return;
      }
      this.events.push(event);
      this.handle(event);
    });
  }

  private send(event: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(event));
  }

  private id(prefix: string): string {
    this.counter++;
    return `${prefix}_${this.counter}`;
  }

  private handle(event: Record<string, unknown>): void {
    switch (event.type) {
      case 'session.update': {
        const session = (event.session ?? {}) as Record<string, unknown>;
        const turn = (session.turn_detection ?? {}) as Record<string, unknown>;
        if (typeof turn.silence_duration_ms === 'number') this.silenceMs = turn.silence_duration_ms;
        this.createResponse = turn.create_response !== false;
        this.send({ type: 'session.updated', session });
        return;
      }
      case 'input_audio_buffer.append':
        this.append(Buffer.from(String(event.audio ?? ''), 'base64'));
        return;
      case 'response.create':
        this.respond();
        return;
      case 'response.cancel':
        if (this.current && (event.response_id === undefined || event.response_id === this.current.id)) {
          this.current.cancelled = true;
        } else {
          this.send({
            type: 'error',
            event_id: this.id('event'),
            error: {
              type: 'invalid_request_error',
              code: 'response_cancel_not_active',
              message: 'no active response',
              event_id: event.event_id,
            },
          });
        }
        return;
      case 'conversation.item.truncate':
        this.send({
          type: 'conversation.item.truncated',
          item_id: event.item_id,
          content_index: event.content_index,
          audio_end_ms: event.audio_end_ms,
        });
        return;
      case 'conversation.item.create':
        this.send({ type: 'conversation.item.created', item: event.item });
        return;
      default:
        return;
    }
  }

  /** Server VAD on the audio's own clock: 20 ms windows, speech by RMS, a turn ends after silenceMs. */
  private append(bytes: Buffer): void {
    const joined = new Int16Array(this.pending.length + (bytes.length >> 1));
    joined.set(this.pending);
    for (let index = 0; index < bytes.length >> 1; index++) {
      joined[this.pending.length + index] = bytes.readInt16LE(index * 2);
    }
    let at = 0;
    for (; at + WINDOW <= joined.length; at += WINDOW) {
      const window = joined.subarray(at, at + WINDOW);
      let sum = 0;
      for (const sample of window) sum += sample * sample;
      const voiced = Math.sqrt(sum / WINDOW) > SPEECH_RMS;
      this.audioMs += 20;
      if (voiced) {
        this.lastVoiceMs = this.audioMs;
        if (this.speechFrom === null) {
          this.speechFrom = this.audioMs - 20;
          this.userItem = this.id('item_user');
          this.send({
            type: 'input_audio_buffer.speech_started',
            audio_start_ms: this.speechFrom,
            item_id: this.userItem,
          });
        }
      } else if (this.speechFrom !== null && this.audioMs - this.lastVoiceMs >= this.silenceMs) {
        this.speechFrom = null;
        this.turnEnded();
      }
    }
    this.pending = joined.slice(at);
  }

  private turnEnded(): void {
    const item = this.userItem;
    this.send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: this.lastVoiceMs, item_id: item });
    this.send({ type: 'input_audio_buffer.committed', item_id: item });
    this.send({
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: item,
      content_index: 0,
      transcript: this.options.transcribe?.() ?? '',
    });
    if (this.createResponse) this.respond();
  }

  private respond(): void {
    const reply = this.queue.shift() ?? { text: 'OK.' };
    this.chain = this.chain.then(() => this.reply(reply)).catch(() => undefined);
  }

  private async reply(reply: RealtimeReply): Promise<void> {
    if (reply.hang) return;
    if (reply.error) {
      this.send({
        type: 'error',
        error: { type: 'server_error', code: 'server_error', message: reply.error },
      });
      return;
    }
    const id = this.id('resp');
    const current = { id, cancelled: false };
    this.current = current;
    this.send({ type: 'response.created', response: { id, status: 'in_progress' } });
    const output: Array<Record<string, unknown>> = [];
    if (reply.text) {
      const item = this.id('item_agent');
      this.send({
        type: 'response.output_item.added',
        response_id: id,
        item: { id: item, type: 'message', role: 'assistant' },
      });
      const pcm = resample(await synthesize(reply.text, { voice: 'en-us' }), 8000, RATE);
      const chunk = Math.round((RATE * (reply.chunkMs ?? 200)) / 1000);
      let sent = 0;
      for (let at = 0; at < pcm.length && !current.cancelled; at += chunk) {
        const piece = pcm.subarray(at, at + chunk);
        const delta = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
        this.send({
          type: 'response.audio.delta',
          response_id: id,
          item_id: item,
          delta: delta.toString('base64'),
        });
        sent += piece.length;
        if (reply.drop) {
          this.ws.terminate();
          return;
        }
        if (reply.malformed) {
          this.ws.send('{"type": "response.audio.delta", ');
          return;
        }
        if (reply.paceMs) await sleep(reply.paceMs);
      }
      // The transcript of the audio made: all of it, or the share sent before a cancel.
      const words = reply.text.split(/\s+/);
      const said = current.cancelled
        ? words.slice(0, Math.ceil((words.length * sent) / pcm.length)).join(' ')
        : reply.text;
      this.send({ type: 'response.audio.done', response_id: id, item_id: item });
      this.send({ type: 'response.audio_transcript.done', response_id: id, item_id: item, transcript: said });
      output.push({ id: item, type: 'message', role: 'assistant' });
    }
    if (!current.cancelled) {
      for (const call of reply.toolCalls ?? []) {
        const item = this.id('item_call');
        const callId = this.id('call');
        const args = JSON.stringify(call.arguments ?? {});
        this.send({
          type: 'response.output_item.added',
          response_id: id,
          item: { id: item, type: 'function_call', call_id: callId, name: call.name },
        });
        this.send({
          type: 'response.function_call_arguments.done',
          response_id: id,
          item_id: item,
          call_id: callId,
          name: call.name,
          arguments: args,
        });
        output.push({ id: item, type: 'function_call', call_id: callId, name: call.name, arguments: args });
      }
    }
    this.current = null;
    if (reply.failed && !current.cancelled) {
      this.send({
        type: 'response.done',
        response: {
          id,
          status: 'failed',
          status_details: { type: 'failed', error: { type: 'server_error', message: reply.failed } },
          output,
        },
      });
      return;
    }
    this.send({
      type: 'response.done',
      response: { id, status: current.cancelled ? 'cancelled' : 'completed', output },
    });
  }
}
