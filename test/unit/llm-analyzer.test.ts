import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmAnalyzer } from '../../src/adapters/analysis/llm.js';
import { LocalAnalyzer } from '../../src/adapters/analysis/local.js';
import type { MetricConfig } from '../../src/domain/analysis.js';

/**
 * The LLM analyzer against a local server speaking the OpenAI chat-completions protocol: what it
 * sends, how it holds the answer to the schema, its retries, and its fallback to the local analyzer.
 */
describe('LLM analyzer', () => {
  let server: http.Server;
  let base: string;
  const requests: Array<{ path: string; headers: http.IncomingHttpHeaders; body: Record<string, unknown> }> =
    [];
  /** The server's next answers, one per request: a status and a message content, or 'hang'. */
  let script: Array<{ status: number; content?: string; raw?: string } | 'hang'> = [];
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) },
  );

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => {
        raw += chunk.toString();
      });
      req.on('end', () => {
        requests.push({
          path: req.url ?? '',
          headers: req.headers,
          body: JSON.parse(raw) as Record<string, unknown>,
        });
        const next = script.shift() ?? { status: 500 };
        if (next === 'hang') return;
        const body =
          next.raw ??
          JSON.stringify({
            choices: [{ index: 0, message: { role: 'assistant', content: next.content ?? '' } }],
          });
        res.writeHead(next.status, { 'content-type': 'application/json' }).end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    requests.length = 0;
    logs.length = 0;
    script = [];
  });

  const config: MetricConfig = {
    enabled: true,
    customMetrics: [{ name: 'budgetApproved', type: 'boolean', description: 'Has the contact a budget' }],
  };
  const transcription = [
    { role: 'assistant' as const, content: 'Hi, this is Ava from Acme. Is now a good time?' },
    { role: 'user' as const, content: 'Yes. We have budget for this quarter, send me a quote.' },
  ];
  const good = {
    summary: 'The contact has budget this quarter and asked for a quote.',
    metricJson: {
      intent: 'interested',
      sentiment: 'positive',
      confidence: 0.9,
      keyPoints: ['Budget this quarter', 'Wants a quote'],
      customerSatisfaction: 4,
      budgetApproved: true,
    },
  };
  const analyzer = (extra: Partial<ConstructorParameters<typeof LlmAnalyzer>[0]> = {}) =>
    new LlmAnalyzer({
      url: base,
      apiKey: 'sk-test-123',
      model: 'test-model',
      fallback: new LocalAnalyzer(),
      logger,
      backoffMs: 10,
      timeoutMs: 1000,
      ...extra,
    });

  it('asks the chat-completions endpoint for JSON that fits the schema and returns the answer', async () => {
    script = [{ status: 200, content: JSON.stringify(good) }];
    const llm = analyzer();
    const result = await llm.analyze({ transcription, metricConfig: config, callStatus: 'COMPLETED' });
    await llm.close();
    expect(result).toEqual({ ...good, customMetricsProcessed: 1, analyzer: 'llm:test-model' });
    expect(requests).toHaveLength(1);
    const [sent] = requests;
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-test-123');
    expect(sent?.body).toMatchObject({ model: 'test-model', response_format: { type: 'json_object' } });
    const messages = sent?.body.messages as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    const asked = JSON.parse(messages[1]?.content ?? '{}');
    expect(asked.transcription).toEqual(transcription);
    expect(Object.keys(asked.metricJsonSchema.properties)).toEqual([
      'intent',
      'sentiment',
      'confidence',
      'keyPoints',
      'customerSatisfaction',
      'budgetApproved',
    ]);
  });

  it('accepts a fenced JSON answer and a full chat-completions URL', async () => {
    script = [{ status: 200, content: `\`\`\`json\n${JSON.stringify(good)}\n\`\`\`` }];
    const llm = analyzer({ url: `${base}/chat/completions` });
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(result.analyzer).toBe('llm:test-model');
    expect(requests[0]?.path).toBe('/v1/chat/completions');
  });

  it('retries an answer that does not fit the schema, and a 429, then uses the valid one', async () => {
    script = [
      {
        status: 200,
        content: JSON.stringify({ ...good, metricJson: { ...good.metricJson, intent: 'maybe' } }),
      },
      { status: 429, raw: '{"error":"slow down"}' },
      { status: 200, content: JSON.stringify(good) },
    ];
    const llm = analyzer();
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(requests).toHaveLength(3);
    expect(result.metricJson.intent).toBe('interested');
    expect(logs).toEqual([]);
  });

  it('falls back to the local analyzer with a logged reason when the server keeps failing', async () => {
    script = [{ status: 500 }, { status: 502 }, { status: 503 }];
    const llm = analyzer();
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(requests).toHaveLength(3);
    expect(result.analyzer).toBe('local');
    expect(result.metricJson.intent).toBe('interested');
    expect(logs[0]).toMatchObject({ reason: 'the server answered 503', model: 'test-model' });
  });

  it('does not retry a request the server refuses (401) and falls back at once', async () => {
    script = [{ status: 401, raw: '{"error":"bad key"}' }];
    const llm = analyzer();
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(requests).toHaveLength(1);
    expect(result.analyzer).toBe('local');
    expect(String(logs[0]?.reason)).toContain('401');
  });

  it('gives up on a server that does not answer in time', async () => {
    script = ['hang', 'hang'];
    const llm = analyzer({ timeoutMs: 200, retries: 1 });
    const started = Date.now();
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(result.analyzer).toBe('local');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(logs[0]).toMatchObject({ reason: 'the server did not answer in time' });
  });

  it('falls back when the answer is not JSON at all', async () => {
    script = [
      { status: 200, content: 'The contact seemed keen.' },
      { status: 200, raw: '<html>gateway</html>' },
      { status: 200, content: '{"summary": ""}' },
    ];
    const llm = analyzer();
    const result = await llm.analyze({ transcription, metricConfig: config });
    await llm.close();
    expect(result.analyzer).toBe('local');
    expect(requests).toHaveLength(3);
  });
});
