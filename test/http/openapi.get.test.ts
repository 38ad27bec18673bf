import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/openapi.json', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('is public OpenAPI 3.1 listing every endpoint with the bearer scheme', async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });
    const paths = Object.keys(doc.paths);
    for (const path of [
      '/api/v1/agent',
      '/api/v1/call/dial',
      '/api/private/call/dial',
      '/api/v1/status/call',
      '/api/v1/call/check-status',
      '/api/v1/health',
      '/api/v1/calls/{callId}/recording.wav',
      '/api/v1/batch',
      '/api/v1/batch/check-status',
      '/api/v1/batch/{batchId}/status',
      '/api/v1/status/batch',
      '/api/v1/batch/list',
      '/api/v1/batch/cancel',
      '/api/v1/batch/pause',
      '/api/v1/batch/resume',
      '/api/v1/batch/{batchId}/export',
      '/api/v1/webhooks/deliveries',
      '/api/v1/call/create-summary',
      '/api/v1/call/get-metric',
      '/api/private/call/get-metric',
      '/api/v1/webhooks/deliveries/{deliveryId}/retry',
      '/admin/v1/users',
      '/admin/v1/keys',
      '/admin/v1/agents',
    ]) {
      expect(paths, path).toContain(path);
    }
    expect(doc.paths['/api/private/call/dial'].post.deprecated).toBe(true);
    expect(doc.paths['/api/v1/batch'].post.responses['202']).toBeDefined();
    expect(doc.paths['/api/v1/call/dial'].post.responses['409']).toBeDefined();
    expect(doc.paths['/api/v1/call/dial'].post.responses['429']).toBeDefined();
    expect(doc.paths['/admin/v1/users/{userId}'].patch.requestBody).toBeDefined();
  });

  it('is rendered as a reference page at /docs, from the document itself, with nothing from outside', async () => {
    const res = await t.request({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const path of Object.keys(doc.paths)) expect(res.body, path).toContain(`<code>${path}</code>`);
    expect(res.body).toContain('id="webhooks"');
    expect(res.body).toContain('<code>call.completed</code>');
    // Each operation's short summary, then what it does at length.
    const exported = doc.paths['/api/v1/batch/{batchId}/export'].get;
    expect(res.body).toContain(`<p><strong>${exported.summary}</strong> ${exported.description}</p>`);
    expect(res.body).not.toMatch(/(src|href)="https?:/);
  });

  it('is a valid OpenAPI 3.1 document, webhooks included', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(Object.keys(doc.webhooks)).toEqual([
      'call.started',
      'call.answered',
      'call.completed',
      'batch.completed',
      'batch.failed',
      'batch.paused',
      'batch.resumed',
      'batch.cancelled',
    ]);
    const call = doc.webhooks['call.completed'].post;
    expect(call.parameters.map((p: { name: string }) => p.name)).toEqual([
      'x-outdial-signature',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]);
    expect(
      call.requestBody.content['application/json'].schema.properties.call.properties.summary,
    ).toBeDefined();
    // Every operation says what its errors look like.
    for (const [path, item] of Object.entries(
      doc.paths as Record<string, Record<string, { responses: object }>>,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        if (path.startsWith('/api/v1') && !path.endsWith('recording.wav')) {
          expect(Object.keys(operation.responses), `${method} ${path}`).toContain('401');
        }
      }
    }
  });
});
