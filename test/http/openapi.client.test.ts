import createClient, { type Client } from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The operations this file calls, in the shape openapi-typescript generates from the document (it
 * cannot be installed beside TypeScript 7, so the few we need are written out; the document itself
 * is read from the server below, and every content type and header checked comes from it).
 */
interface Paths {
  '/api/v1/openapi.json': {
    get: { parameters: object; responses: { 200: { content: { 'application/json': OpenApiDoc } } } };
  };
  '/api/v1/call/dial': {
    post: {
      parameters: { header?: { 'idempotency-key'?: string } };
      requestBody: { content: { 'application/json': { agentConfigId: string; to: string } } };
      responses: { 200: { content: { 'application/json': { callId: string; status: string } } } };
    };
  };
  '/api/v1/call/check-status': {
    get: {
      parameters: { query: { callId: string } };
      responses: {
        200: { content: { 'application/json': { data: { status: string; recordingUrl: string | null } } } };
      };
    };
  };
  '/api/v1/calls/{callId}/recording.wav': {
    get: {
      parameters: { path: { callId: string } };
      responses: { 200: { content: { 'audio/wav': string } } };
    };
  };
  '/api/v1/batch': {
    post: {
      parameters: object;
      requestBody: {
        content: {
          'application/json': {
            agentId: string;
            contacts: Array<{ phoneNumber: string }>;
            options?: { maxCallsPerSecond?: number; retryStrategy?: { maxAttempts?: number } };
          };
        };
      };
      responses: { 202: { content: { 'application/json': { batchId: string } } } };
    };
  };
  '/api/v1/batch/{batchId}/export': {
    get: {
      parameters: { path: { batchId: string } };
      responses: { 200: { content: { 'text/csv': string } } };
    };
  };
  '/api/v1/suppressions': {
    get: {
      parameters: { query?: { limit?: number; cursor?: string } };
      responses: { 200: { content: { 'application/json': Array<{ phoneNumber: string }> } } };
    };
    post: {
      parameters: object;
      requestBody: { content: { 'application/json': { phoneNumber: string } } };
      responses: { 201: { content: { 'application/json': { phoneNumber: string } } } };
    };
  };
}

interface DocResponse {
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
}
interface OpenApiDoc {
  paths: Record<string, Record<string, { responses: Record<string, DocResponse> }>>;
}

type ParseAs = 'json' | 'text' | 'arrayBuffer';

/** What a client generated from the document reads a body as, by the media type the document declares. */
function parseAsFor(mediaType: string): ParseAs {
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return 'json';
  if (mediaType.startsWith('text/')) return 'text';
  return 'arrayBuffer';
}

describe('a client built on the OpenAPI document (openapi-fetch over a real server)', () => {
  let t: TestApp;
  let account: Account;
  let client: Client<Paths>;
  let doc: OpenApiDoc;
  /** The one media type the document declares for a success response. */
  const declared = (
    path: string,
    method: string,
    status: string,
  ): { mediaType: string; response: DocResponse } => {
    const response = doc.paths[path]?.[method]?.responses[status] ?? {};
    const types = Object.keys(response.content ?? {});
    expect(types, `${method} ${path} ${status}`).toHaveLength(1);
    return { mediaType: types[0] ?? '', response };
  };

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    account = await t.createAccount({ minutes: 100 });
    const base = await t.runtime.app.listen({ host: '127.0.0.1', port: 0 });
    client = createClient<Paths>({ baseUrl: base, headers: { authorization: `Bearer ${account.key}` } });
    const got = await client.GET('/api/v1/openapi.json');
    expect(got.response.status).toBe(200);
    doc = got.data as OpenApiDoc;
  });
  afterAll(() => t.close());

  it('gets a call recording as the audio/wav the document declares', async () => {
    // No userId in the body: the API key names the user, as the document says.
    const dialed = await client.POST('/api/v1/call/dial', {
      body: { agentConfigId: account.agentId, to: '+14155550142' },
    });
    expect(dialed.response.status).toBe(200);
    const callId = dialed.data?.callId ?? '';
    await eventually(async () => {
      const status = await client.GET('/api/v1/call/check-status', { params: { query: { callId } } });
      return status.data?.data.recordingUrl ? true : undefined;
    }, 15_000);

    const { mediaType } = declared('/api/v1/calls/{callId}/recording.wav', 'get', '200');
    expect(mediaType).toBe('audio/wav');
    const parseAs = parseAsFor(mediaType);
    const recording = await client.GET('/api/v1/calls/{callId}/recording.wav', {
      params: { path: { callId } },
      parseAs,
    });
    expect(recording.error).toBeUndefined();
    expect(recording.response.headers.get('content-type')).toBe(mediaType);
    const bytes = Buffer.from(recording.data as unknown as ArrayBuffer);
    expect(bytes.subarray(0, 4).toString()).toBe('RIFF');
    expect(bytes.subarray(8, 12).toString()).toBe('WAVE');
    expect(bytes.length).toBeGreaterThan(44);
  });

  it('gets a batch export as the text/csv the document declares', async () => {
    const created = await client.POST('/api/v1/batch', {
      body: {
        agentId: account.agentId,
        contacts: [{ phoneNumber: '+14155559201' }, { phoneNumber: '+14155550001' }],
        // The second number is busy: one attempt, so the batch ends without waiting for a retry.
        options: { maxCallsPerSecond: 30, retryStrategy: { maxAttempts: 1 } },
      },
    });
    expect(created.response.status).toBe(202);
    const batchId = created.data?.batchId ?? '';

    const { mediaType } = declared('/api/v1/batch/{batchId}/export', 'get', '200');
    expect(mediaType).toBe('text/csv');
    const parseAs = parseAsFor(mediaType);
    const csv = await eventually(async () => {
      const exported = await client.GET('/api/v1/batch/{batchId}/export', {
        params: { path: { batchId } },
        parseAs,
      });
      expect(exported.error).toBeUndefined();
      expect(exported.response.headers.get('content-type')?.split(';')[0]).toBe(mediaType);
      const text = exported.data as unknown as string;
      const lines = text.trim().split(/\r?\n/);
      return lines.length === 3 && lines.slice(1).every((line) => line.includes(',done,'))
        ? lines
        : undefined;
    }, 20_000);
    expect(csv[0]).toMatch(/^seq,phoneNumber,contactId,/);
    expect(csv.slice(1).map((line) => line.split(',')[1])).toEqual(['+14155559201', '+14155550001']);
  });

  it('reads the next page where the paging headers the document declares say', async () => {
    for (const phoneNumber of ['+14155550151', '+14155550152', '+14155550153']) {
      const added = await client.POST('/api/v1/suppressions', { body: { phoneNumber } });
      expect(added.response.status).toBe(201);
    }
    const names = Object.keys(declared('/api/v1/suppressions', 'get', '200').response.headers ?? {});
    expect(names).toEqual(['Link', 'x-next-cursor']);

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 3; page++) {
      const got = await client.GET('/api/v1/suppressions', {
        params: { query: { limit: 2, ...(cursor ? { cursor } : {}) } },
      });
      seen.push(...(got.data ?? []).map((s) => s.phoneNumber));
      const [link, next] = names.map((name) => got.response.headers.get(name));
      if (page === 0) {
        expect(next).toMatch(/\S/);
        expect(link).toBe(
          `</api/v1/suppressions?limit=2&cursor=${encodeURIComponent(next ?? '')}>; rel="next"`,
        );
      }
      if (!next) {
        // The last page carries neither header.
        expect(link).toBeNull();
        break;
      }
      cursor = next;
    }
    expect(seen).toEqual(['+14155550153', '+14155550152', '+14155550151']);
  });

  it('answers a replay under an Idempotency-Key with the header the document declares', async () => {
    const names = Object.keys(declared('/api/v1/call/dial', 'post', '200').response.headers ?? {});
    expect(names).toEqual(['Idempotent-Replayed']);
    const send = () =>
      client.POST('/api/v1/call/dial', {
        params: { header: { 'idempotency-key': 'openapi-replay-1' } },
        body: { agentConfigId: account.agentId, to: '+14155550143' },
      });
    const first = await send();
    const again = await send();
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get('Idempotent-Replayed')).toBeNull();
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.data?.callId).toBe(first.data?.callId);
  });

  it('takes userId as optional in the bodies, as the document says, and refuses another user in it', async () => {
    const other = await t.createAccount();
    const contacts = [{ phoneNumber: '+14155550161' }];
    const bodies: Array<[string, Record<string, unknown>, number]> = [
      ['/api/v1/batch/preflight', { agentId: account.agentId, contacts }, 200],
      ['/api/v1/batch', { agentId: account.agentId, contacts }, 202],
      ['/api/v1/call/dial', { agentConfigId: account.agentId, to: '+14155550162' }, 200],
    ];
    for (const [url, body, success] of bodies) {
      const schema = (
        doc.paths[url]?.post as { requestBody?: { content: Record<string, { schema: object }> } }
      )?.requestBody?.content['application/json']?.schema as { properties: object; required?: string[] };
      expect(Object.keys(schema.properties), url).toContain('userId');
      expect(schema.required ?? [], url).not.toContain('userId');
      const without = await t.request({ method: 'POST', url, key: account.key, payload: body });
      expect(without.statusCode, url).toBe(success);
      const own = await t.request({
        method: 'POST',
        url,
        key: account.key,
        payload: { ...body, userId: account.userId, ...(url.endsWith('dial') ? { to: '+14155550163' } : {}) },
      });
      expect(own.statusCode, url).toBe(success);
      const another = await t.request({
        method: 'POST',
        url,
        key: account.key,
        payload: { ...body, userId: other.userId },
      });
      expect(another.statusCode, url).toBe(403);
      expect(another.json(), url).toEqual({ error: 'Forbidden', message: 'Access denied' });
    }
    const batches = await t.request({ method: 'GET', url: '/api/v1/batch/list', key: other.key });
    expect(batches.json()).toEqual([]);
  });
});
