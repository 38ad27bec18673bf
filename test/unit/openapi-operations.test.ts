import { beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_TAGS } from '../../src/http/openapi.js';
import { openApiDocument } from '../../src/http/openapi-document.js';

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  deprecated?: boolean;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { schema?: { properties?: object; required?: string[] } }> };
  responses: Record<
    string,
    { headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }
  >;
}
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  tags: Array<{ name: string; description?: string }>;
  info: { license?: { name: string }; contact?: object };
  components: { schemas: Record<string, unknown> };
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** The tags of the team's convention, in the document's order (README, API section). */
const TAGS = ['probes', 'agents', 'calls', 'batches', 'webhooks', 'account', 'suppressions', 'admin'];

function operations(items: Doc['paths']): Array<[string, Operation]> {
  return Object.entries(items).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]): [string, Operation] => [`${method.toUpperCase()} ${path}`, op]),
  );
}

/**
 * What every operation must carry, whoever adds it: the convention of the team (an operationId in
 * camelCase, a short summary, a description, one of the known tags), checked on the document the
 * server serves so that a route added without it fails here and not in an integrator's generator.
 */
describe('every operation of the OpenAPI document', () => {
  let doc: Doc;
  beforeAll(async () => {
    doc = (await openApiDocument('0.0.0-test')) as unknown as Doc;
  });

  it('declares the known tags, each with a description, and its licence and contact', () => {
    expect(doc.tags.map((tag) => tag.name)).toEqual(TAGS);
    expect(OPENAPI_TAGS.map((tag) => tag.name)).toEqual(TAGS);
    for (const tag of doc.tags) expect(tag.description, tag.name).toMatch(/\w{3,}/);
    expect(doc.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
    expect(doc.info.contact).toEqual({ name: 'outdial maintainers' });
  });

  it('has a unique camelCase operationId, a short summary, a description and one known tag', () => {
    const all = [...operations(doc.paths), ...operations(doc.webhooks)];
    expect(all.length).toBeGreaterThan(40);
    const ids = new Map<string, string>();
    for (const [name, op] of all) {
      expect(op.operationId, name).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      const id = op.operationId ?? '';
      expect(ids.get(id), `${name} reuses the operationId of ${ids.get(id)}`).toBeUndefined();
      ids.set(id, name);
      expect(op.summary, name).toMatch(/\w/);
      // A summary is a title in a generated menu; what it does at length goes to the description.
      expect(op.summary?.length ?? 0, `${name}: "${op.summary}"`).toBeLessThanOrEqual(60);
      expect(op.description, name).toMatch(/\w{3,}.*\w/);
      expect(op.tags, name).toHaveLength(1);
      expect(TAGS, name).toContain(op.tags?.[0]);
    }
  });

  it('names its shared schemas (no def-0) and refers to them by name', () => {
    const names = Object.keys(doc.components.schemas);
    expect(names).toContain('ErrorBody');
    for (const name of names) expect(name).not.toMatch(/^def-\d+$/);
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).toMatch(/^"\$ref":"#\/components\/schemas\/[A-Z][A-Za-z]+"$/);
  });

  it('leaves the dashboard out: its HTML pages are not API operations', () => {
    for (const path of Object.keys(doc.paths)) {
      expect(path).not.toMatch(/^\/(dashboard|sign-in|sign-out|api-keys|docs|metrics)/);
    }
  });

  it('declares the content types the export and the recording are sent in', () => {
    const exported = doc.paths['/api/v1/batch/{batchId}/export']?.get?.responses['200'];
    expect(Object.keys(exported?.content ?? {})).toEqual(['text/csv']);
    const recording = doc.paths['/api/v1/calls/{callId}/recording.wav']?.get?.responses['200'];
    expect(Object.keys(recording?.content ?? {})).toEqual(['audio/wav']);
  });

  it('declares Link and x-next-cursor on every list that pages with a cursor', () => {
    const paged = operations(doc.paths).filter(([, op]) =>
      (op.parameters ?? []).some((p) => p.in === 'query' && p.name === 'cursor'),
    );
    expect(paged.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'GET /api/v1/batch/list',
        'GET /api/v1/suppressions',
        'GET /api/v1/webhooks/deliveries',
      ]),
    );
    for (const [name, op] of paged) {
      expect(Object.keys(op.responses['200']?.headers ?? {}), name).toEqual(['Link', 'x-next-cursor']);
    }
  });

  it('declares Deprecation and Link on the success of every deprecated operation', () => {
    const deprecated = operations(doc.paths).filter(([, op]) => op.deprecated === true);
    expect(deprecated.map(([name]) => name).sort()).toEqual([
      'GET /api/private/call/get-metric',
      'GET /api/v1/batch',
      'POST /api/private/call/dial',
    ]);
    for (const [name, op] of deprecated) {
      const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'));
      expect(Object.keys(success?.[1].headers ?? {}), name).toEqual(
        expect.arrayContaining(['Deprecation', 'Link']),
      );
    }
  });

  it('declares Idempotent-Replayed on the success of every operation that takes an Idempotency-Key', () => {
    const keyed = operations(doc.paths).filter(([, op]) =>
      (op.parameters ?? []).some((p) => p.in === 'header' && p.name === 'idempotency-key'),
    );
    expect(keyed.map(([name]) => name)).toEqual(
      expect.arrayContaining(['POST /api/v1/call/dial', 'POST /api/v1/batch']),
    );
    for (const [name, op] of keyed) {
      const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'));
      expect(Object.keys(success?.[1].headers ?? {}), name).toContain('Idempotent-Replayed');
    }
  });

  it('never requires userId in a public request: the API key names the user', () => {
    for (const [name, op] of operations(doc.paths)) {
      if (!name.includes(' /api/')) continue;
      const body = op.requestBody?.content['application/json']?.schema;
      expect(body?.required ?? [], name).not.toContain('userId');
      const param = (op.parameters ?? []).find((p) => p.name === 'userId') as
        | { required?: boolean }
        | undefined;
      expect(param?.required ?? false, name).toBe(false);
    }
  });
});
