import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';

/** The cases issue 13 lists under "Bad input", exactly as reported (each answered 500 or a framework body). */
describe('bad input: the reported cases', () => {
  let t: TestApp;
  let alice: Account;
  let callId: string;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount({ minutes: 100 });
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+15550100000', agentConfigId: alice.agentId },
    });
    callId = dial.json<{ callId: string }>().callId;
  });
  afterAll(() => t.close());

  const dialBody = (extra: Record<string, unknown>) => ({
    to: '+15550100001',
    agentConfigId: alice.agentId,
    ...extra,
  });
  const batchBody = (contacts: unknown[], options?: Record<string, unknown>) => ({
    agentId: alice.agentId,
    userId: alice.userId,
    contacts,
    ...(options ? { options } : {}),
  });
  const batchCount = async () =>
    (
      await t.runtime.database.db
        .selectFrom('batches')
        .select('id')
        .where('user_id', '=', alice.userId)
        .execute()
    ).length;

  describe('keys named like built-in object properties (item 8)', () => {
    for (const name of ['toString', 'valueOf', 'hasOwnProperty', '__defineGetter__']) {
      it(`?${name}=1 on GET /api/v1/status/call is a 400 naming it, not a 500`, async () => {
        const res = await t.request({
          method: 'GET',
          url: `/api/v1/status/call?callId=${callId}&${name}=1`,
          key: alice.key,
        });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({
          error: 'Bad Request',
          message: `Invalid parameter: ${name} is not a recognised field`,
          details: { fieldErrors: { [name]: ['is not a recognised field'] } },
        });
      });

      it(`a body key ${name} on POST /api/v1/call/dial is a 400 naming it`, async () => {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/call/dial',
          key: alice.key,
          payload: dialBody({ [name]: 1 }),
        });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({
          error: 'Validation failed',
          code: 'INVALID_REQUEST',
          details: { fieldErrors: { [name]: ['is not a recognised field'] } },
        });
      });
    }

    it('a __proto__ key in a JSON body is a 400 naming it', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        headers: { 'content-type': 'application/json' },
        payload: `{"to":"+15550100001","agentConfigId":"${alice.agentId}","callerDetails":{"metadata":{"__proto__":{"x":1}}}}`,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { fieldErrors: { 'callerDetails.metadata.__proto__': ['is a reserved key'] } },
      });
    });
  });

  describe('NUL characters, deep nesting and dates that cannot be stored (item 9)', () => {
    it('?agentId=%00 is a 400 naming agentId', async () => {
      const res = await t.request({ method: 'GET', url: '/api/v1/agent?agentId=%00', key: alice.key });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: 'Bad Request',
        message: 'Invalid parameter: agentId must not contain a NUL character (\\u0000)',
        details: { fieldErrors: { agentId: ['must not contain a NUL character (\\u0000)'] } },
      });
    });

    it('a NUL in a path parameter is a 400', async () => {
      const res = await t.request({ method: 'GET', url: '/api/v1/batch/bat_%00/status', key: alice.key });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error: 'Bad Request',
        details: { fieldErrors: { batchId: [expect.any(String)] } },
      });
    });

    it('callerDetails.name "a\\u0000b" is a 400 naming the field', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        payload: dialBody({ callerDetails: { name: 'a\u0000b' } }),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: 'Validation failed',
        code: 'INVALID_REQUEST',
        message: 'callerDetails.name must not contain a NUL character (\\u0000)',
        details: { fieldErrors: { 'callerDetails.name': ['must not contain a NUL character (\\u0000)'] } },
      });
    });

    it('a \\u0000 escape in dial metadata, as a value or a key, is a 400', async () => {
      for (const [payload, field] of [
        [
          `{"to":"+15550100001","agentConfigId":"${alice.agentId}","callerDetails":{"metadata":{"note":"x\\u0000"}}}`,
          'callerDetails.metadata.note',
        ],
        [
          `{"to":"+15550100001","agentConfigId":"${alice.agentId}","callerDetails":{"metadata":{"a\\u0000":1}}}`,
          'callerDetails.metadata.a\\u0000',
        ],
      ] as const) {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/call/dial',
          key: alice.key,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        expect(res.statusCode, payload).toBe(400);
        expect(Object.keys(res.json<{ details: { fieldErrors: object } }>().details.fieldErrors)).toEqual([
          field,
        ]);
      }
    });

    it('metadata nested 10,000 deep is a 400 naming where it passes the limit of 32', async () => {
      const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        headers: { 'content-type': 'application/json' },
        payload: `{"to":"+15550100001","agentConfigId":"${alice.agentId}","callerDetails":{"metadata":${deep}}}`,
      });
      expect(res.statusCode).toBe(400);
      const fieldErrors = res.json<{ details: { fieldErrors: Record<string, string[]> } }>().details
        .fieldErrors;
      const [field] = Object.keys(fieldErrors);
      expect(field?.startsWith('callerDetails.metadata.a.a')).toBe(true);
      expect(fieldErrors[field ?? '']).toEqual(['nests deeper than 32 levels of objects and arrays']);
    });

    it('tags holding a NUL are a 400 naming the tag', async () => {
      const before = await batchCount();
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/batch',
        key: alice.key,
        payload: batchBody([{ phoneNumber: '+15550100002' }], { tags: ['ok', 'a\u0000b'] }),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        details: { fieldErrors: { 'options.tags.1': [expect.any(String)] } },
      });
      expect(await batchCount()).toBe(before);
    });

    it('an expiresAt of 2030-01-01T23:59:60Z is a 400 naming expiresAt', async () => {
      const res = await t.admin('POST', '/admin/v1/keys', {
        userId: alice.userId,
        expiresAt: '2030-01-01T23:59:60Z',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error: 'Validation failed',
        code: 'INVALID_REQUEST',
        details: { fieldErrors: { expiresAt: ['must match format "date-time"'] } },
      });
    });

    it('a scheduledStartTime in year 10000 is a 400 naming it', async () => {
      for (const when of ['+010000-01-01T00:00:00Z', '10000-01-01T00:00:00Z']) {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/batch',
          key: alice.key,
          payload: batchBody([{ phoneNumber: '+15550100003' }], { scheduledStartTime: when }),
        });
        expect(res.statusCode, when).toBe(400);
        expect(res.json()).toMatchObject({
          code: 'INVALID_REQUEST',
          details: { fieldErrors: { 'options.scheduledStartTime': [expect.any(String)] } },
        });
      }
    });
  });

  describe('framework errors in the spec error body (item 11)', () => {
    it('GET /api/v1/batch/%ZZ/status is a 400 in the spec body', async () => {
      const res = await t.request({ method: 'GET', url: '/api/v1/batch/%ZZ/status', key: alice.key });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: 'Bad Request',
        message: 'The URL is not valid percent-encoded UTF-8',
      });
    });

    it('a path parameter over 100 characters is a 414 in the spec body', async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/batch/${'x'.repeat(200)}/status`,
        key: alice.key,
      });
      expect(res.statusCode).toBe(414);
      expect(res.json()).toEqual({
        error: 'URI Too Long',
        code: 'URI_TOO_LONG',
        message: 'A path parameter is longer than 100 characters',
      });
    });

    it('headers over 16 KB are a 431 in the spec body, from the HTTP parser itself', async () => {
      await t.runtime.app.listen({ host: '127.0.0.1', port: 0 });
      const address = t.runtime.app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let data = '';
        socket.on('data', (chunk) => {
          data += chunk.toString();
        });
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
        socket.write(`GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      });
      const [head, body] = raw.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 431 /);
      expect(JSON.parse(body ?? '')).toEqual({
        error: 'Request Header Fields Too Large',
        code: 'HEADERS_TOO_LARGE',
        message: 'The request line and headers are larger than 16 KB',
      });
    });

    it('a request that arrives while the server closes is a 503 in the spec body', async () => {
      const closing = await startTestApp();
      const app = closing.runtime.app;
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk.toString();
      });
      const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // The request line is in before the close starts (the connection is busy, so not dropped as
      // idle); its headers end after.
      socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const closed = closing.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.write('\r\n');
      await ended;
      await closed;
      const [head, body] = data.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 503 /);
      expect(JSON.parse(body ?? '')).toEqual({
        error: 'Service Unavailable',
        code: 'SERVICE_UNAVAILABLE',
        message: 'The server is shutting down; try again',
      });
    });

    it("/metrics answers 401 with the admin routes' message (it takes the admin token)", async () => {
      const res = await t.request({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing admin token' });
      const admin = await t.request({ method: 'GET', url: '/admin/v1/users/usr_x' });
      expect(admin.json()).toEqual(res.json());
    });

    it("the dashboard's JSON routes and assets answer errors in the spec body", async () => {
      const noSession = await t.request({ method: 'GET', url: '/dashboard/api/batches/bat_x' });
      expect(noSession.statusCode).toBe(401);
      expect(noSession.json()).toEqual({ error: 'Unauthorized', message: 'Sign in again' });
      const nul = await t.request({ method: 'GET', url: '/dashboard/api/calls/%00' });
      expect(nul.statusCode).toBe(400);
      expect(nul.json()).toMatchObject({
        error: 'Bad Request',
        message: expect.stringMatching(/^Invalid parameter: /),
      });
      // A name found on Object.prototype, not in the asset table: was a 500.
      const asset = await t.request({ method: 'GET', url: '/dashboard/assets/__lookupSetter__' });
      expect(asset.statusCode).toBe(404);
      expect(asset.json()).toEqual({ error: 'Not Found', message: 'Route not found' });
    });

    it('a body of the wrong type on an admin route is a declared 415 in the spec body', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/admin/v1/agents',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
        payload: '{"a":1}',
      });
      expect(res.statusCode).toBe(415);
      expect(res.json()).toEqual({
        error: 'Unsupported Media Type',
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'Send the body as application/json',
      });
      const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
      expect(Object.keys(doc.paths['/admin/v1/agents'].post.responses)).toEqual(
        expect.arrayContaining(['400', '401', '408', '413', '415', '431', '500', '503']),
      );
      expect(Object.keys(doc.paths['/api/v1/batch/{batchId}/status'].get.responses)).toEqual(
        expect.arrayContaining(['400', '401', '404', '414', '431', '500']),
      );
    });
  });
});
