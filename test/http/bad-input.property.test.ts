import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Bad input to every operation of the OpenAPI document the app serves (so endpoints added later are
 * covered without touching this file): wrong types, missing and extra fields, keys named like the
 * built-in object properties, NUL and other control characters, huge strings, deep nesting, odd
 * unicode, bad dates, malformed JSON, wrong content types, malformed path and query parameters,
 * with the user's key, another user's key, a bad key or none. Whatever is sent, the answer is never
 * a 5xx, every JSON 4xx has the spec's error body, and the status is one the document declares for
 * that operation.
 *
 * Seeded: OUTDIAL_PROPERTY_SEED reruns a failure (fast-check prints the seed and the failing input).
 */
const SEED = Number(process.env.OUTDIAL_PROPERTY_SEED ?? 1313);
/** 150 runs per operation (about 6,000 requests) take about 15 s per storage path on this 2-core machine. */
const RUNS = Number(process.env.OUTDIAL_PROPERTY_RUNS ?? 150);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: Json[];
  const?: Json;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  default?: Json;
  $ref?: string;
}
interface Parameter {
  in: 'query' | 'path' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body: Schema | null;
  statuses: Set<number>;
  security: 'api' | 'admin' | 'public';
}

/** Built-in object property names: as keys they once reached code that looked them up on `{}`. */
const BUILTIN_KEYS = [
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
  '__lookupSetter__',
  'constructor',
  '__proto__',
  'prototype',
  'length',
];

/** Strings that are bad wherever a string goes (as text, before JSON or URL encoding). */
const BAD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0001\u0002\u001f\u007f',
  '\r\n\t',
  '\ud800',
  'a\udfffb',
  '\ufeff\u200b\u202e',
  '\uffff\ufffe',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀',
  'e\u0301\u0301\u0301',
  '2030-01-01T23:59:60Z',
  '+010000-01-01T00:00:00Z',
  '10000-01-01T00:00:00Z',
  '2030-02-30T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '1969-12-31T23:59:59Z',
  'NaN',
  '-1',
  '1e400',
  '../../etc/passwd',
  "'; drop table users; --",
  '%00',
  ...BUILTIN_KEYS,
];

const stringBad = fc.oneof(
  fc.constantFrom(...BAD_STRINGS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 8 }),
  fc.constantFrom(10_000, 70_000).map((n) => 'x'.repeat(n)),
);

/** JSON text fragments that are bad wherever a value goes. */
const deep = (depth: number, open: string, close: string, leaf = '1') =>
  open.repeat(depth) + leaf + close.repeat(depth);
const BAD_FRAGMENTS: string[] = [
  'null',
  'true',
  '0',
  '-1',
  '1.5',
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '[]',
  '{}',
  '[null]',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '{"a\\u0000b":1}',
  '{"\\u0000":"x"}',
  '{"k":"\\u0000"}',
  '{"toString":1,"valueOf":"x","__defineGetter__":[]}',
  '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  deep(100, '[', ']'),
  deep(10_000, '{"a":', '}'),
  deep(20_000, '[', ']'),
  deep(64, '{"a":', '}', '"\\u0000"'),
];
const fragmentBad = fc.oneof(
  fc.constantFrom(...BAD_FRAGMENTS),
  stringBad.map((s) => JSON.stringify(s)),
  fc.constantFrom(...BUILTIN_KEYS).map((k) => `{${JSON.stringify(k)}:${JSON.stringify(k)}}`),
);

/** Whole bodies that are not what the operation reads. */
const WHOLE_BODIES: { payload: string; contentType: string | null }[] = [
  { payload: '{', contentType: 'application/json' },
  { payload: '{"a":1,}', contentType: 'application/json' },
  { payload: "{'a':1}", contentType: 'application/json' },
  { payload: 'nul', contentType: 'application/json' },
  { payload: '', contentType: 'application/json' },
  { payload: 'null', contentType: 'application/json' },
  { payload: '[]', contentType: 'application/json' },
  { payload: '"text"', contentType: 'application/json' },
  { payload: '42', contentType: 'application/json' },
  { payload: '\u0000', contentType: 'application/json' },
  { payload: '{"a":"\u0000"}', contentType: 'application/json' },
  { payload: '\ufeff{}', contentType: 'application/json' },
  { payload: '{"a":1}', contentType: 'text/plain' },
  { payload: 'a=1&toString=2', contentType: 'application/x-www-form-urlencoded' },
  { payload: '--x\r\n\r\n--x--', contentType: 'multipart/form-data; boundary=x' },
  { payload: '{"a":1}', contentType: 'application/json; charset=utf-16' },
  { payload: '{"a":1}', contentType: 'application/jsonx' },
  { payload: '{"a":1}', contentType: 'x/\u0000' },
  { payload: '{"a":1}', contentType: null },
  { payload: `{"a":"${'x'.repeat(2 * 1024 * 1024)}"}`, contentType: 'application/json' },
];

interface Ids {
  alice: Account;
  victim: Account;
  callId: string;
  contactId: string;
  batchId: string;
}

/** Path values: the victim's ids where the operation might destroy what it names. */
function validFor(name: string, ids: Ids, where: 'path' | 'value'): string | undefined {
  const owner = where === 'path' ? ids.victim : ids.alice;
  switch (name) {
    case 'agentId':
    case 'agentConfigId':
      return owner.agentId;
    case 'userId':
      return owner.userId;
    case 'keyId':
      return owner.keyId;
    case 'callId':
      return ids.callId;
    case 'contactId':
      return ids.contactId;
    case 'batchId':
      return ids.batchId;
    default:
      return undefined;
  }
}

function resolve(schema: Schema, doc: OpenApiDoc): Schema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.split('/').pop() ?? '';
  return doc.components?.schemas?.[name] ?? {};
}

/** A value the schema accepts (or close to it), so that bad input reaches past the first check. */
function validValue(schemaIn: Schema, name: string, ids: Ids, doc: OpenApiDoc): fc.Arbitrary<Json> {
  const schema = resolve(schemaIn, doc);
  const known = validFor(name, ids, 'value');
  if (known) return fc.constant(known);
  const options = schema.anyOf ?? schema.oneOf;
  if (options) {
    const usable = options.filter((o) => o.type !== 'null');
    return usable.length > 0
      ? fc.oneof(...usable.map((o) => validValue(o, name, ids, doc)))
      : fc.constant(null);
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const props = Object.entries(schema.properties ?? {});
      if (props.length === 0) return fc.constant({ note: 'x' });
      const required = new Set(schema.required ?? []);
      const entries = props.map(([key, sub]) =>
        fc.tuple(fc.constant(key), validValue(sub, key, ids, doc), fc.boolean()),
      );
      return fc.tuple(...entries).map((chosen) => {
        const out: Record<string, Json> = {};
        for (const [key, value, keep] of chosen) if (required.has(key) || keep) out[key] = value;
        return out;
      });
    }
    case 'array': {
      const min = Math.max(1, schema.minItems ?? 0);
      return fc.array(validValue(schema.items ?? {}, name, ids, doc), { minLength: min, maxLength: min + 1 });
    }
    case 'integer':
    case 'number':
      return fc.integer({
        min: Math.ceil(schema.minimum ?? 0),
        max: Math.floor(schema.maximum ?? Math.max(10, (schema.minimum ?? 0) + 10)),
      });
    case 'boolean':
      return fc.boolean();
    case 'string':
      return validString(schema, name);
    default:
      return fc.constant('x');
  }
}

function validString(schema: Schema, name: string): fc.Arbitrary<string> {
  if (schema.format === 'date-time') return fc.constant(new Date(Date.now() + 86_400_000).toISOString());
  if (schema.format === 'email') return fc.constant('someone@example.com');
  if (schema.format === 'uri' || /url/i.test(name)) return fc.constant('https://203.0.113.10/hook');
  if (/phone|^to$/i.test(name) || schema.pattern?.includes('\\+'))
    return fc.integer({ min: 1000, max: 9999 }).map((n) => `+1555010${n}`);
  if (schema.pattern) return fc.constant('metric_a');
  if (/time/i.test(name)) return fc.constant(new Date(Date.now() + 86_400_000).toISOString());
  if (/zone/i.test(name)) return fc.constant('UTC');
  const min = schema.minLength ?? 1;
  const max = Math.min(schema.maxLength ?? 20, 20);
  return fc.string({ minLength: min, maxLength: Math.max(min, max) }).map((s) => s.replace(/\0/g, 'x'));
}

/** Every path of an object/array value, for picking where the bad input goes. */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) out.push(...pathsOf(v, [...prefix, i]));
  } else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

/** encodeURIComponent, except that a lone surrogate is sent as its WTF-8 bytes (a malformed UTF-8 sequence). */
function enc(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0xd800 && code <= 0xdfff) {
      const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(char);
  }
  return out;
}

const MARK = '"@@BAD@@"';

/** The body with the value at `path` replaced by the raw JSON `fragment` (or removed, or a key added). */
function mutate(
  body: Json,
  path: (string | number)[],
  kind: 'replace' | 'remove' | 'addKey',
  fragment: string,
  key: string,
): string {
  const copy = structuredClone(body) as Json;
  if (path.length === 0 && kind === 'replace') return fragment;
  const parent = path.slice(0, -1).reduce<Json>((node, step) => {
    if (node && typeof node === 'object') return (node as Record<string, Json>)[step as string] ?? null;
    return null;
  }, copy);
  const last = path[path.length - 1];
  const target = path.reduce<Json>((node, step) => {
    if (node && typeof node === 'object') return (node as Record<string, Json>)[step as string] ?? null;
    return null;
  }, copy);
  if (kind === 'addKey') {
    if (target && typeof target === 'object' && !Array.isArray(target)) {
      // Written as text: a `__proto__` key in a JS object literal would set the prototype instead.
      const text = JSON.stringify(copy, (_k, v: Json) => (v === target ? { ...target, '@@KEY@@': 1 } : v));
      return text.replace('"@@KEY@@":1', `${JSON.stringify(key)}:${fragment}`);
    }
    return JSON.stringify(copy);
  }
  if (parent && typeof parent === 'object' && last !== undefined) {
    if (kind === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete (parent as Record<string, Json>)[last];
      return JSON.stringify(copy);
    }
    (parent as Record<string, Json>)[last] = MARK.slice(1, -1);
    return JSON.stringify(copy).replace(MARK, fragment);
  }
  return JSON.stringify(copy);
}

interface OpenApiDoc {
  paths: Record<string, Record<string, RawOperation>>;
  components?: { schemas?: Record<string, Schema> };
  security?: Record<string, string[]>[];
}
interface RawOperation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, unknown>;
  security?: Record<string, string[]>[];
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function operationsOf(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const security = op.security ?? doc.security ?? [];
      const names = security.flatMap((s) => Object.keys(s));
      out.push({
        method: method.toUpperCase(),
        path,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        statuses: new Set(Object.keys(op.responses ?? {}).map(Number)),
        security: names.includes('adminToken') ? 'admin' : names.includes('bearerAuth') ? 'api' : 'public',
      });
    }
  }
  return out;
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

const BAD_DATES = [
  '2030-01-01T23:59:60Z',
  '+010000-01-01T00:00:00Z',
  '10000-01-01T00:00:00Z',
  '9999-12-31T23:59:60Z',
  '2030-02-30T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '1969-12-31T23:59:59Z',
  '2030-01-01T24:00:00Z',
  '2030-01-01T00:00:00+25:00',
  '2030-01-01',
  'tomorrow',
];

function valueAt(value: Json, path: (string | number)[]): Json {
  return path.reduce<Json>((node, step) => {
    if (node && typeof node === 'object') return (node as Record<string, Json>)[step as string] ?? null;
    return null;
  }, value);
}

/**
 * One string of an otherwise valid body made bad in a way that fits it: a date that no Date or
 * database holds for a date, the string itself with a NUL, a lone surrogate or at 70,000
 * characters, or any bad string.
 */
function badLeaf(
  value: Json,
  leaves: (string | number)[][],
): fc.Arbitrary<{ payload: string; contentType: string | null }> {
  return fc.constantFrom(...leaves).chain((path) => {
    const original = String(valueAt(value, path));
    const dateLike = /^\d{4}-\d\d-\d\dT/.test(original);
    const variants = fc.oneof(
      ...(dateLike ? [{ weight: 4, arbitrary: fc.constantFrom(...BAD_DATES) }] : []),
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          `${original}\u0000`,
          `\u0000${original}`,
          `${original}\ud800`,
          `${original}${'x'.repeat(70_000)}`,
        ),
      },
      { weight: 2, arbitrary: stringBad },
    );
    return variants.map((bad) => ({
      payload: mutate(value, path, 'replace', JSON.stringify(bad), ''),
      contentType: 'application/json' as string | null,
    }));
  });
}

/** One bad request for `op`: the arbitrary behind every run of the property. */
function badRequest(
  op: Operation,
  ids: Ids,
  doc: OpenApiDoc,
  keys: Record<string, string>,
): fc.Arbitrary<Sent> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');

  const pathValue = (p: Parameter) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(enc(validFor(p.name, ids, 'path') ?? 'x_1')) },
      { weight: 3, arbitrary: stringBad.filter((s) => s.length > 0).map((s) => enc(s)) },
      { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%E0%A4%A', '%00', '%C0%AE', 'a%2Fb', '%FF%FE') },
    );
  const queryValue = (p: Parameter) => {
    const valid = validFor(p.name, ids, 'value');
    return fc.oneof(
      {
        weight: 2,
        arbitrary: valid
          ? fc.constant(enc(valid))
          : validValue(p.schema ?? {}, p.name, ids, doc).map((v) => enc(String(v))),
      },
      { weight: 3, arbitrary: stringBad.map((s) => enc(s)) },
      { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%00', '%FF', '') },
    );
  };
  const query = fc
    .tuple(
      fc.tuple(...queryParams.map((p) => fc.tuple(fc.constant(p.name), queryValue(p), fc.nat(9)))),
      fc.array(
        fc.tuple(
          fc.oneof(
            fc.constantFrom(...BUILTIN_KEYS),
            stringBad.map((s) => s.slice(0, 50)),
          ),
          stringBad.map((s) => s.slice(0, 100)),
        ),
        { maxLength: 2 },
      ),
    )
    .map(([declared, extra]) => {
      const parts: string[] = [];
      for (const [name, value, roll] of declared) {
        if (roll === 0) continue; // missing
        parts.push(`${name}=${value}`);
        if (roll === 1) parts.push(`${name}=${value}`); // repeated: an array where a string is read
      }
      for (const [name, value] of extra) parts.push(`${enc(name)}=${enc(value)}`);
      return parts.length > 0 ? `?${parts.join('&')}` : '';
    });
  const url = fc
    .tuple(fc.tuple(...pathParams.map((p) => fc.tuple(fc.constant(p.name), pathValue(p)))), query)
    .map(([params, q]) => {
      let path = op.path;
      for (const [name, value] of params) path = path.replace(`{${name}}`, value);
      return path + q;
    });

  const key = fc.constantFrom(...Object.keys(keys));
  const headers = key.map((k) => {
    const token = keys[k];
    return token ? { authorization: `Bearer ${token}` } : ({} as Record<string, string>);
  });

  const hasBody = op.method !== 'GET';
  if (!hasBody) {
    return fc.tuple(url, headers).map(([u, h]) => ({ method: op.method, url: u, headers: h }));
  }
  const base: fc.Arbitrary<Json> = op.body ? validValue(op.body, '', ids, doc) : fc.constant({});
  const mutated = base.chain((value) => {
    const paths = pathsOf(value);
    const leaves = paths.filter((path) => typeof valueAt(value, path) === 'string');
    const arms = leaves.length === 0 ? [] : [{ weight: 4, arbitrary: badLeaf(value, leaves) }];
    return fc.oneof(
      ...arms,
      {
        weight: 6,
        arbitrary: fc
          .tuple(
            fc.constantFrom(...paths),
            fc.constantFrom('replace', 'remove', 'addKey') as fc.Arbitrary<'replace' | 'remove' | 'addKey'>,
            fragmentBad,
            fc.oneof(
              fc.constantFrom(...BUILTIN_KEYS),
              stringBad.map((s) => s.slice(0, 50)),
            ),
          )
          .map(([path, kind, fragment, extraKey]) => ({
            payload: mutate(value, path, kind, fragment, extraKey),
            contentType: 'application/json' as string | null,
          })),
      },
      {
        weight: 1,
        arbitrary: fc.constant({ payload: JSON.stringify(value), contentType: 'application/json' }),
      },
      { weight: 2, arbitrary: fc.constantFrom(...WHOLE_BODIES) },
    );
  });
  return fc.tuple(url, headers, mutated).map(([u, h, body]) => ({
    method: op.method,
    url: u,
    headers: body.contentType ? { ...h, 'content-type': body.contentType } : h,
    payload: body.payload,
  }));
}

const ERROR_KEYS = new Set(['error', 'code', 'message', 'details']);

/** What every answer must be, whatever was sent. */
function check(op: Operation, res: LightMyRequestResponse): string | null {
  if (res.statusCode >= 500) return `answered ${res.statusCode}: ${res.body.slice(0, 300)}`;
  if (!op.statuses.has(res.statusCode))
    return `answered ${res.statusCode}, which the document does not declare (${[...op.statuses].join(', ')}): ${res.body.slice(0, 300)}`;
  if (res.statusCode < 400) return null;
  const type = String(res.headers['content-type'] ?? '');
  // The dashboard's pages answer browsers with HTML pages; everything else answers JSON.
  const page =
    !op.path.startsWith('/api/') && !op.path.startsWith('/admin/') && !op.path.startsWith('/dashboard/api/');
  if (type.startsWith('text/html'))
    return page ? null : `answered an HTML ${res.statusCode} on an API operation`;
  if (!type.startsWith('application/json')) return `answered ${res.statusCode} as ${type || 'nothing'}`;
  const body = res.json() as Record<string, unknown>;
  // The spec's one exception: a dial for a contact with a call in progress answers the earlier callId.
  if (res.statusCode === 409 && typeof body.callId === 'string' && typeof body.message === 'string')
    return null;
  const shaped =
    body !== null &&
    typeof body === 'object' &&
    !Array.isArray(body) &&
    typeof body.error === 'string' &&
    Object.keys(body).every((k) => ERROR_KEYS.has(k)) &&
    (body.code === undefined || typeof body.code === 'string') &&
    (body.message === undefined || typeof body.message === 'string') &&
    (body.details === undefined ||
      (typeof body.details === 'object' && body.details !== null && !Array.isArray(body.details)));
  if (!shaped) return `answered ${res.statusCode} without the spec's error body: ${res.body.slice(0, 300)}`;
  if (/is not a function|Cannot read|undefined|FST_|stack/i.test(`${body.message ?? ''} ${body.error}`))
    return `answered internal text: ${res.body.slice(0, 300)}`;
  return null;
}

describe('bad input to every operation of the OpenAPI document', () => {
  let t: TestApp;
  let ids: Ids;
  let doc: OpenApiDoc;
  let keys: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp();
    const alice = await t.createAccount({ minutes: 1000 });
    const bob = await t.createAccount();
    const victim = await t.createAccount();
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+15550100000', agentConfigId: alice.agentId },
    });
    const callId = dial.json<{ callId: string }>().callId;
    const status = await t.request({
      method: 'GET',
      url: `/api/v1/status/call?callId=${callId}`,
      key: alice.key,
    });
    const batch = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: alice.key,
      payload: {
        agentId: alice.agentId,
        userId: alice.userId,
        contacts: [{ phoneNumber: '+15550100001' }],
        options: { scheduledStartTime: new Date(Date.now() + 86_400_000).toISOString() },
      },
    });
    ids = {
      alice,
      victim,
      callId,
      contactId: status.json<{ contactId: string }>().contactId,
      batchId: batch.json<{ batchId: string }>().batchId,
    };
    keys = { alice: alice.key, bob: bob.key, none: '', bad: 'garbage.token.x', admin: ADMIN_TOKEN };
    doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json<OpenApiDoc>();
  });
  afterAll(() => t.close());

  it('lists the operations it exercises', () => {
    const ops = operationsOf(doc);
    expect(ops.length).toBeGreaterThan(30);
    expect(ops.map((o) => `${o.method} ${o.path}`)).toContain('POST /api/v1/batch');
  });

  it('never answers 5xx, always answers the spec error body and a declared status', async () => {
    const failures: string[] = [];
    for (const op of operationsOf(doc)) {
      // Operations that need the admin token get it most of the time, the others the user's key.
      const opKeys =
        op.security === 'admin'
          ? { ...keys, admin2: ADMIN_TOKEN, admin3: ADMIN_TOKEN }
          : { ...keys, alice2: keys.alice ?? '', alice3: keys.alice ?? '' };
      const result = await fc.check(
        fc.asyncProperty(badRequest(op, ids, doc, opKeys), async (sent) => {
          const res = await t.runtime.app.inject({
            method: sent.method as 'GET',
            url: sent.url,
            headers: sent.headers,
            ...(sent.payload !== undefined ? { payload: sent.payload } : {}),
          });
          const problem = check(op, res);
          if (problem) {
            const body =
              sent.payload === undefined
                ? ''
                : ` ${sent.headers['content-type'] ?? ''} ${sent.payload.slice(0, 200)}`;
            throw new Error(`${sent.method} ${sent.url.slice(0, 200)}${body}: ${problem}`);
          }
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
      if (result.failed) {
        const cause =
          result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
        failures.push(`${op.method} ${op.path} (seed ${result.seed}, run ${result.numRuns}): ${cause}`);
      }
    }
    expect(failures, failures.join('\n\n')).toEqual([]);
  }, 240_000);
});
