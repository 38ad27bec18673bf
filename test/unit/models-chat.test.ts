import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiChatModel, serverSentData } from '../../src/adapters/models/chat.js';
import { ModelError } from '../../src/adapters/models/errors.js';
import type { ChatDelta, ChatTool } from '../../src/voice/contracts.js';
import {
  type ChatServer,
  type ChatServerOptions,
  downUrl,
  startChatServer,
} from '../helpers/model-servers.js';

/** The streaming chat client against the local OpenAI-compatible server. */
let server: ChatServer | undefined;
let client: OpenAiChatModel | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  server = undefined;
  client = undefined;
});

async function setup(
  options: ChatServerOptions,
  clientOptions: Partial<ConstructorParameters<typeof OpenAiChatModel>[0]> = {},
) {
  server = await startChatServer(options);
  client = new OpenAiChatModel({
    url: server.url,
    model: 'test-model',
    apiKey: 'sk-local',
    ...clientOptions,
  });
  return { server, client };
}

async function collect(stream: AsyncIterable<ChatDelta>): Promise<ChatDelta[]> {
  const out: ChatDelta[] = [];
  for await (const delta of stream) out.push(delta);
  return out;
}

const tools: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'book',
      description: 'Books a meeting',
      parameters: { type: 'object', properties: { day: { type: 'string' } } },
    },
  },
];

describe('OpenAiChatModel', () => {
  it('streams the reply word by word and sends model, messages, stream and the bearer key', async () => {
    const { server, client } = await setup({ replies: ['Hello Jordan. This is Ava from Acme.'] });
    const deltas = await collect(
      client.stream({
        messages: [
          { role: 'system', content: 'You are Ava.' },
          { role: 'user', content: 'Hello?' },
        ],
      }),
    );
    expect(deltas.every((delta) => delta.type === 'text')).toBe(true);
    expect(deltas.length).toBe(7);
    expect(deltas.map((delta) => (delta.type === 'text' ? delta.text : '')).join('')).toBe(
      'Hello Jordan. This is Ava from Acme.',
    );
    const received = server.requests[0];
    expect(received).toMatchObject({ model: 'test-model', stream: true, path: '/v1/chat/completions' });
    expect(received?.messages).toEqual([
      { role: 'system', content: 'You are Ava.' },
      { role: 'user', content: 'Hello?' },
    ]);
    expect(received?.tools).toBeUndefined();
    expect(received?.headers.authorization).toBe('Bearer sk-local');
  });

  it('assembles tool calls from their pieces and yields each complete, after the text', async () => {
    const { server, client } = await setup({
      argumentChunkChars: 3,
      replies: [
        {
          text: 'Let me book that.',
          toolCalls: [
            { name: 'book', arguments: { day: 'Tuesday', time: '10:00' } },
            { name: 'end_call', id: 'call_end' },
          ],
        },
      ],
    });
    const deltas = await collect(
      client.stream({ messages: [{ role: 'user', content: 'Tuesday works' }], tools }),
    );
    expect(deltas.filter((delta) => delta.type === 'text').length).toBe(4);
    expect(deltas.filter((delta) => delta.type === 'tool_call')).toEqual([
      {
        type: 'tool_call',
        call: {
          id: 'call_1_0',
          type: 'function',
          function: { name: 'book', arguments: '{"day":"Tuesday","time":"10:00"}' },
        },
      },
      {
        type: 'tool_call',
        call: { id: 'call_end', type: 'function', function: { name: 'end_call', arguments: '{}' } },
      },
    ]);
    expect(server.requests[0]?.tools).toEqual(tools);
  });

  it('works with a base URL without /v1 and without an API key', async () => {
    server = await startChatServer({ replies: ['Yes.'] });
    client = new OpenAiChatModel({ url: `${server.url.replace(/\/v1$/, '')}/`, model: 'm' });
    expect(await collect(client.stream({ messages: [] }))).toEqual([{ type: 'text', text: 'Yes.' }]);
    expect(server.requests[0]?.path).toBe('/chat/completions');
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('cancels the request when the signal aborts mid-reply: the server sees the connection closed', async () => {
    const { server, client } = await setup({
      chunkDelayMs: 100,
      replies: ['one two three four five six seven eight nine ten'],
    });
    const controller = new AbortController();
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const delta of client.stream({ messages: [], signal: controller.signal })) {
        if (delta.type === 'text') seen.push(delta.text);
        if (seen.length === 2) controller.abort();
      }
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual(['one ', 'two ']);
    await expect.poll(() => server.aborted, { timeout: 5000 }).toBe(1);
    // The next request goes through as usual.
    server.set({ chunkDelayMs: 0 });
    server.push('Sorry, go on.');
    expect(await collect(client.stream({ messages: [] }))).toHaveLength(3);
  });

  it('cancels the request when the consumer stops reading early', async () => {
    const { server, client } = await setup({ chunkDelayMs: 100, replies: ['one two three four five six'] });
    for await (const _delta of client.stream({ messages: [] })) break;
    await expect.poll(() => server.aborted, { timeout: 5000 }).toBe(1);
  });

  it('throws ModelError naming the status and message of a 500', async () => {
    const { client } = await setup({ fail: 500 });
    const failure = await collect(client.stream({ messages: [] })).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelError);
    expect(failure).toMatchObject({ port: 'chat', reason: 'status', status: 500, code: 'PROVIDER_ERROR' });
    expect(String(failure)).toMatch(/answered 500: scripted failure 500/);
  });

  it('throws ModelError when the server is down', async () => {
    client = new OpenAiChatModel({ url: await downUrl(), model: 'm' });
    const failure = await collect(client.stream({ messages: [] })).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'ModelError', reason: 'network' });
    expect(String(failure)).toMatch(/ECONNREFUSED/);
  });

  it('throws ModelError on a malformed stream and on a dropped connection', async () => {
    const { client } = await setup({
      replies: [
        { text: 'partial words here', malformed: true },
        { text: 'partial words here', drop: true },
      ],
    });
    for (const reason of ['malformed', 'network']) {
      const failure = await collect(client.stream({ messages: [] })).catch((error: unknown) => error);
      expect(failure).toMatchObject({ name: 'ModelError', reason });
    }
  });

  it('does not count the time the consumer holds a delta (speaking it) against the server', async () => {
    // Chunks every 100 ms, under the idle limit; the consumer holds each for 400 ms.
    const { client } = await setup(
      { replies: ['One. Two. Three.'], chunkDelayMs: 100 },
      { idleTimeoutMs: 200 },
    );
    const seen: string[] = [];
    for await (const delta of client.stream({ messages: [] })) {
      if (delta.type === 'text') seen.push(delta.text);
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    expect(seen.join('')).toBe('One. Two. Three.');
  });

  it('times out a server that never answers, and one that stops mid-stream', async () => {
    const { server, client } = await setup({ hang: true }, { firstTokenTimeoutMs: 300, idleTimeoutMs: 300 });
    const failure = await collect(client.stream({ messages: [] })).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'ModelError', reason: 'timeout' });
    expect(String(failure)).toMatch(/did not answer within 300 ms/);
    await expect.poll(() => server.aborted).toBe(1);

    server.set({ hang: false, chunkDelayMs: 2000 });
    server.push('slow words here');
    const slow = await collect(client.stream({ messages: [] })).catch((error: unknown) => error);
    expect(slow).toMatchObject({ name: 'ModelError', reason: 'timeout' });
  });
});

describe('serverSentData', () => {
  async function* bytes(...parts: string[]) {
    for (const part of parts) yield Buffer.from(part);
  }
  const all = async (source: AsyncIterable<string>) => {
    const out: string[] = [];
    for await (const item of source) out.push(item);
    return out;
  };

  it('joins events split anywhere, with any line ending, skipping comments', async () => {
    expect(
      await all(
        serverSentData(bytes(': ping\n\nda', 'ta: {"a":1}\r', '\n\r\ndata: x\ndata: y\n\nevent: e\ndata:z')),
      ),
    ).toEqual(['{"a":1}', 'x\ny', 'z']);
  });

  it('decodes multi-byte characters cut between chunks', async () => {
    const text = Buffer.from('data: नमस्ते\n\n');
    expect(
      await all(
        serverSentData(
          (async function* () {
            yield text.subarray(0, 9);
            yield text.subarray(9);
          })(),
        ),
      ),
    ).toEqual(['नमस्ते']);
  });
});
