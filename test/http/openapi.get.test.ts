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
  });
});
