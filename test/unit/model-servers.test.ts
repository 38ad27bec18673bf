import { afterEach, describe, expect, it } from 'vitest';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { PHONE_RATE } from '../../src/voice/audio/pcm.js';
import { resample } from '../../src/voice/audio/resample.js';
import { decodeWav, encodeWav } from '../../src/voice/audio/wav.js';
import { join, silence } from '../helpers/audio.js';
import {
  type ChatServer,
  downUrl,
  type SttServer,
  startChatServer,
  startModelServers,
  startSttServer,
  startTtsServer,
  TTS_RATE,
  type TtsServer,
} from '../helpers/model-servers.js';

/**
 * The local model servers the voice tests run against, checked with plain fetch: they must speak
 * the OpenAI protocols as OpenAI does, or the clients' tests would prove nothing.
 */
let servers: Array<ChatServer | SttServer | TtsServer> = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

async function chat(options: Parameters<typeof startChatServer>[0] = {}) {
  const server = await startChatServer(options);
  servers.push(server);
  return server;
}

const post = (url: string, body: unknown, init: RequestInit = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
    ...init,
  });

/** The JSON objects of an SSE body, and whether it ended with [DONE]. */
interface StreamChunk {
  object: string;
  choices: Array<{
    delta: {
      role?: string;
      content?: string;
      tool_calls?: Array<{
        index: number;
        id?: string;
        type?: string;
        function: { name?: string; arguments: string };
      }>;
    };
    finish_reason: string | null;
  }>;
}

function events(text: string): { chunks: StreamChunk[]; done: boolean } {
  const data = text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice(6));
  return {
    chunks: data.filter((line) => line !== '[DONE]').map((line) => JSON.parse(line) as StreamChunk),
    done: data.at(-1) === '[DONE]',
  };
}

describe('chat server', () => {
  it('streams a scripted reply in word chunks, then finish_reason and [DONE], and records the request', async () => {
    const server = await chat({ replies: ['Hello there. How are you?'] });
    const response = await post(`${server.url}/chat/completions`, {
      model: 'test-model',
      stream: true,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { chunks, done } = events(await response.text());
    expect(done).toBe(true);
    const contents = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '');
    expect(contents.join('')).toBe('Hello there. How are you?');
    expect(contents.filter((text) => text !== '').length).toBe(5);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(server.requests[0]).toMatchObject({
      model: 'test-model',
      stream: true,
      path: '/v1/chat/completions',
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
    expect(server.lastUserText()).toBe('Hi');
  });

  it('streams tool calls by index: id and name first, then the arguments in pieces', async () => {
    const server = await chat({
      replies: [
        {
          text: 'One moment.',
          toolCalls: [
            { name: 'lookup', arguments: { order: 'A-1234', detail: 'full' } },
            { name: 'end_call', arguments: '{}' },
          ],
        },
      ],
    });
    const tools = [{ type: 'function', function: { name: 'lookup', description: 'd', parameters: {} } }];
    // Without /v1 too, as a base URL may be given either way.
    const base = server.url.replace(/\/v1$/, '');
    const { chunks } = events(
      await (
        await post(`${base}/chat/completions`, { model: 'm', stream: true, messages: [], tools })
      ).text(),
    );
    const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []);
    const first = calls.filter((call) => call.index === 0);
    expect(first[0]).toMatchObject({
      id: 'call_1_0',
      type: 'function',
      function: { name: 'lookup', arguments: '' },
    });
    expect(first.length).toBeGreaterThan(2);
    expect(first.map((call) => call.function.arguments).join('')).toBe('{"order":"A-1234","detail":"full"}');
    expect(calls.filter((call) => call.index === 1)[0]?.function.name).toBe('end_call');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(server.requests[0]?.tools).toEqual(tools);
  });

  it('answers from a function of the request, and in JSON when stream is false', async () => {
    const server = await chat({ respond: (request) => `You said: ${request.messages.at(-1)?.content}` });
    const response = await post(`${server.url}/chat/completions`, {
      model: 'm',
      messages: [{ role: 'user', content: 'call me tomorrow' }],
    });
    expect(await response.json()).toMatchObject({
      object: 'chat.completion',
      choices: [
        { message: { role: 'assistant', content: 'You said: call me tomorrow' }, finish_reason: 'stop' },
      ],
    });
  });

  it('waits firstTokenMs before the first chunk', async () => {
    const server = await chat({ firstTokenMs: 300, replies: ['Hi.'] });
    const started = Date.now();
    const response = await post(`${server.url}/chat/completions`, { model: 'm', stream: true, messages: [] });
    const reader = response.body?.getReader();
    await reader?.read();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await reader?.cancel();
  });

  it('fails with a status, streams malformed data, drops the connection, or hangs and counts the abort', async () => {
    const server = await chat({
      replies: [{ fail: 500 }, { text: 'a b', malformed: true }, { text: 'a b', drop: true }],
    });
    const failed = await post(`${server.url}/chat/completions`, { model: 'm', stream: true, messages: [] });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: { message: 'scripted failure 500' } });

    const malformed = await (
      await post(`${server.url}/chat/completions`, { model: 'm', stream: true, messages: [] })
    ).text();
    expect(() => events(malformed)).toThrow(SyntaxError);

    const dropped = await post(`${server.url}/chat/completions`, { model: 'm', stream: true, messages: [] });
    await expect(dropped.text()).rejects.toThrow();

    server.set({ hang: true });
    const controller = new AbortController();
    const hanging = post(
      `${server.url}/chat/completions`,
      { model: 'm', stream: true, messages: [] },
      {
        signal: controller.signal,
      },
    );
    await expect.poll(() => server.requests.length).toBe(4);
    controller.abort();
    await expect(hanging).rejects.toThrow();
    await expect.poll(() => server.aborted).toBe(1);
    expect(server.requests[3]?.aborted).toBe(true);
  });

  it('is refused once closed, as a server that is down', async () => {
    const server = await chat();
    await server.close();
    await expect(post(`${server.url}/chat/completions`, { messages: [] })).rejects.toThrow();
    await expect(post(`${await downUrl()}/chat/completions`, { messages: [] })).rejects.toThrow();
  });
});

describe('speech-to-text server', () => {
  it('transcribes a wav upload at any rate with pocketsphinx, after delayMs, and records model and language', {
    timeout: 120_000,
  }, async () => {
    const server = await startSttServer({ delayMs: 200 });
    servers.push(server);
    const speech = join(
      silence(300),
      await synthesize('yes I am interested please call me tomorrow'),
      silence(600),
    );
    const form = new FormData();
    form.set(
      'file',
      new Blob([new Uint8Array(encodeWav(resample(speech, PHONE_RATE, 16_000), 16_000))], {
        type: 'audio/wav',
      }),
      'turn.wav',
    );
    form.set('model', 'whisper-1');
    form.set('language', 'en');
    form.set('response_format', 'json');
    const started = Date.now();
    const response = await fetch(`${server.url}/audio/transcriptions`, { method: 'POST', body: form });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    const { text } = (await response.json()) as { text: string };
    expect(text).toMatch(/\btomorrow\b/);
    expect(server.requests[0]).toMatchObject({
      model: 'whisper-1',
      language: 'en',
      sampleRate: 16_000,
      fileName: 'turn.wav',
    });
  });

  it('answers scripted text or a failure', async () => {
    const server = await startSttServer({ text: 'namaste' });
    servers.push(server);
    const form = () => {
      const body = new FormData();
      body.set('file', new Blob([new Uint8Array(encodeWav(silence(200)))]), 'a.wav');
      body.set('model', 'm');
      return body;
    };
    const ok = await fetch(`${server.url}/audio/transcriptions`, { method: 'POST', body: form() });
    expect(await ok.json()).toEqual({ text: 'namaste' });
    server.set({ fail: 503 });
    const failed = await fetch(`${server.url}/audio/transcriptions`, { method: 'POST', body: form() });
    expect(failed.status).toBe(503);
  });
});

describe('text-to-speech server', () => {
  it('streams 24 kHz pcm in chunks after firstByteMs and records voice, speed and model', async () => {
    const server = await startTtsServer({ firstByteMs: 200, chunkDelayMs: 5 });
    servers.push(server);
    const started = Date.now();
    const response = await post(`${server.url}/audio/speech`, {
      model: 'tts-1',
      input: 'Hello, this is a test.',
      voice: 'alloy',
      speed: 1.25,
      response_format: 'pcm',
    });
    const reader = response.body?.getReader();
    const sizes: number[] = [];
    for (;;) {
      const part = await reader?.read();
      if (!part || part.done) break;
      if (sizes.length === 0) expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      sizes.push(part.value.length);
    }
    const bytes = sizes.reduce((a, b) => a + b, 0);
    expect(sizes.length).toBeGreaterThan(3);
    // About a second and more of speech at 24 kHz, 2 bytes a sample.
    expect(bytes / 2 / TTS_RATE).toBeGreaterThan(0.8);
    expect(server.requests[0]).toMatchObject({
      model: 'tts-1',
      voice: 'alloy',
      speed: 1.25,
      responseFormat: 'pcm',
    });
  });

  it('answers a wav file at 24 kHz, and failures', async () => {
    const server = await startTtsServer();
    servers.push(server);
    const wav = await post(`${server.url}/audio/speech`, {
      model: 'tts-1',
      input: 'Hi.',
      voice: 'hi',
      response_format: 'wav',
    });
    const { rate, samples } = decodeWav(Buffer.from(await wav.arrayBuffer()));
    expect(rate).toBe(TTS_RATE);
    expect(samples.length).toBeGreaterThan(0.2 * TTS_RATE);
    server.set({ fail: 500 });
    expect((await post(`${server.url}/audio/speech`, { input: 'Hi.', response_format: 'pcm' })).status).toBe(
      500,
    );
  });
});

describe('startModelServers', () => {
  it('starts the three and gives the environment that points outdial at them', async () => {
    const all = await startModelServers({ chat: { replies: ['Hi.'] } });
    try {
      expect(all.env).toMatchObject({
        OUTDIAL_LLM_URL: all.chat.url,
        OUTDIAL_STT_URL: all.stt.url,
        OUTDIAL_TTS_URL: all.tts.url,
      });
      const response = await post(`${all.env.OUTDIAL_LLM_URL}/chat/completions`, {
        model: 'm',
        messages: [],
      });
      expect(await response.json()).toMatchObject({ choices: [{ message: { content: 'Hi.' } }] });
    } finally {
      await all.close();
    }
  });
});
