import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  assertDeliverableHost,
  checkWebhookUrl,
  type GuardedLookup,
  guardedLookup,
  isForbiddenAddress,
  type LookupFn,
  webhookDispatcher,
} from '../../src/webhooks/address-guard.js';

describe('isForbiddenAddress', () => {
  const forbidden: [string, string][] = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%lo', 'link-local'],
    ['FE80::ABCD%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd00::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['4000::1', 'reserved'],
    // Embedded IPv4: judged by the address they carry.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::a00:1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe:1::1', 'link-local'],
    // Teredo: the client address is the last 32 bits inverted (RFC 4380's example, 192.0.2.45).
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'documentation'],
  ];
  it.each(forbidden)('refuses %s (%s)', (ip, reason) => {
    expect(isForbiddenAddress(ip)).toBe(reason);
  });

  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '100.63.255.255',
    '192.0.1.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:830::200e',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];
  it.each(allowed)('allows %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBeNull();
  });

  const invalid = [
    '',
    'example.com',
    'localhost',
    '127.1',
    '2130706433',
    '0x7f.0.0.1',
    '010.0.0.1',
    '256.1.1.1',
    '1.2.3.4%eth0',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    '1.2.3.4::',
    'fe80::1%',
    '::fffff:1',
  ];
  it.each(invalid)('refuses %j as an invalid address', (text) => {
    expect(isForbiddenAddress(text)).toBe('invalid address');
  });
});

describe('checkWebhookUrl', () => {
  const strict = { allowPrivate: false };
  const relaxed = { allowPrivate: true };

  const refusedAlways: [string, string][] = [
    ['ftp://example.com/hook', 'webhook URLs must use http or https'],
    ['javascript:alert(1)', 'webhook URLs must use http or https'],
    ['file:///etc/passwd', 'webhook URLs must use http or https'],
    ['https://user:pass@example.com/hook', 'webhook URLs must not contain a username or password'],
    ['https://user@example.com/hook', 'webhook URLs must not contain a username or password'],
    ['not a url', 'the webhook URL is not a valid absolute URL'],
    ['/relative/hook', 'the webhook URL is not a valid absolute URL'],
    [`https://example.com/${'a'.repeat(2048)}`, 'webhook URLs may be at most 2048 characters long'],
  ];
  it.each(refusedAlways)('refuses %s even when private hosts are allowed', (raw, reason) => {
    expect(checkWebhookUrl(raw, strict)).toEqual({ ok: false, reason });
    expect(checkWebhookUrl(raw, relaxed)).toEqual({ ok: false, reason });
  });

  const refusedPrivate: [string, string][] = [
    ['http://127.0.0.1/hook', '127.0.0.1 is a loopback address'],
    // The URL parser normalises these to 127.0.0.1 before the check sees them.
    ['http://127.1/hook', '127.0.0.1 is a loopback address'],
    ['http://2130706433/hook', '127.0.0.1 is a loopback address'],
    ['http://0x7f.0.0.1/hook', '127.0.0.1 is a loopback address'],
    ['http://[::1]:8080/', '::1 is a loopback address'],
    ['http://[::ffff:7f00:1]/', '::ffff:7f00:1 is a loopback address'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1 is a loopback address'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ['https://10.0.0.5/hook', '10.0.0.5 is a private address'],
    ['http://0.0.0.0:3000/', '0.0.0.0 is an unspecified address'],
    ['http://[fd00::1]/', 'fd00::1 is a unique-local address'],
    ['http://localhost:8080/x', 'localhost is a local host name, not a public one'],
    ['http://LOCALHOST./x', 'localhost is a local host name, not a public one'],
    ['http://api.localhost/x', 'api.localhost is a local host name, not a public one'],
    ['http://printer.local/x', 'printer.local is a local host name, not a public one'],
    ['http://metadata.google.internal/x', 'metadata.google.internal is a local host name, not a public one'],
    ['http://intranet/hook', 'intranet has no dot, so it is not a public host name'],
  ];
  it.each(refusedPrivate)('refuses %s unless private hosts are allowed', (raw, reason) => {
    expect(checkWebhookUrl(raw, strict)).toEqual({ ok: false, reason });
    const relaxedResult = checkWebhookUrl(raw, relaxed);
    expect(relaxedResult.ok).toBe(true);
  });

  it('accepts a public https URL and returns it parsed', () => {
    const result = checkWebhookUrl('https://example.com/hook?x=1', strict);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.url.href).toBe('https://example.com/hook?x=1');
    expect(checkWebhookUrl('http://hooks.example.org:8443/a', strict).ok).toBe(true);
    expect(checkWebhookUrl('http://8.8.8.8/a', strict).ok).toBe(true);
    expect(checkWebhookUrl('http://[2606:4700:4700::1111]/a', strict).ok).toBe(true);
  });
});

describe('assertDeliverableHost', () => {
  it('throws EWEBHOOKFORBIDDEN for a forbidden IP literal or scheme, and lets names and public addresses by', () => {
    expect(() => assertDeliverableHost(new URL('http://[::ffff:7f00:1]/'), false)).toThrow(
      expect.objectContaining({
        code: 'EWEBHOOKFORBIDDEN',
        message: 'webhook host ::ffff:7f00:1 is a loopback address',
      }),
    );
    expect(() => assertDeliverableHost(new URL('http://10.0.0.1/'), false)).toThrow(/private address/);
    expect(() => assertDeliverableHost(new URL('http://10.0.0.1/'), true)).not.toThrow();
    expect(() => assertDeliverableHost(new URL('http://localhost/'), false)).not.toThrow();
    expect(() => assertDeliverableHost(new URL('https://8.8.8.8/'), false)).not.toThrow();
    expect(() => assertDeliverableHost(new URL('ftp://example.com/'), true)).toThrow(
      expect.objectContaining({ code: 'EWEBHOOKFORBIDDEN' }),
    );
  });
});

/** A resolver over a fixed table, answering asynchronously as dns.lookup does. */
function fakeResolver(table: Record<string, LookupAddress[]>): LookupFn {
  return (hostname, _options, callback) => {
    const found = table[hostname];
    setImmediate(() => {
      if (found) callback(null, found);
      else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    });
  };
}

interface LookupResult {
  error: NodeJS.ErrnoException | null;
  address: string | LookupAddress[];
  family?: number | undefined;
}

function lookupWith(lookup: GuardedLookup, hostname: string, all: boolean): Promise<LookupResult> {
  return new Promise((resolve) => {
    lookup(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
  });
}

describe('guardedLookup', () => {
  const resolve = fakeResolver({
    'private.test': [{ address: '10.0.0.5', family: 4 }],
    'public.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ],
    'mixed.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '::ffff:127.0.0.1', family: 6 },
    ],
  });

  it('refuses a name that resolves to a private address', async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    for (const all of [true, false]) {
      const { error } = await lookupWith(lookup, 'private.test', all);
      expect(error).toMatchObject({
        code: 'EWEBHOOKFORBIDDEN',
        message: 'webhook host private.test resolves to 10.0.0.5, a private address',
      });
    }
  });

  it('refuses a name when any one of its addresses is forbidden', async () => {
    const { error } = await lookupWith(guardedLookup({ allowPrivate: false, resolve }), 'mixed.test', true);
    expect(error).toMatchObject({
      code: 'EWEBHOOKFORBIDDEN',
      message: 'webhook host mixed.test resolves to ::ffff:127.0.0.1, a loopback address',
    });
  });

  it('passes public addresses through in the shape asked for', async () => {
    const lookup = guardedLookup({ allowPrivate: false, resolve });
    expect(await lookupWith(lookup, 'public.test', true)).toEqual({
      error: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookupWith(lookup, 'public.test', false)).toEqual({
      error: null,
      address: '93.184.215.14',
      family: 4,
    });
  });

  it('passes private addresses through when they are allowed, and resolver errors as they are', async () => {
    const lookup = guardedLookup({ allowPrivate: true, resolve });
    expect(await lookupWith(lookup, 'private.test', false)).toEqual({
      error: null,
      address: '10.0.0.5',
      family: 4,
    });
    const { error } = await lookupWith(lookup, 'missing.test', true);
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('webhookDispatcher', () => {
  async function withServer(test: (port: number, hits: () => number) => Promise<void>): Promise<void> {
    let received = 0;
    const server = createServer((_req, res) => {
      received++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await test((server.address() as AddressInfo).port, () => received);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('refuses to connect to a name that resolves to loopback, and connects when allowed', async () => {
    await withServer(async (port, hits) => {
      const guarded = webhookDispatcher({ allowPrivate: false });
      try {
        await expect(request(`http://localhost:${port}/`, { dispatcher: guarded })).rejects.toMatchObject({
          code: 'EWEBHOOKFORBIDDEN',
          message: expect.stringMatching(
            /^webhook host localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
          ),
        });
        expect(hits()).toBe(0);
      } finally {
        await guarded.close();
      }

      const open = webhookDispatcher({ allowPrivate: true });
      try {
        const answer = await request(`http://localhost:${port}/`, { dispatcher: open });
        expect(answer.statusCode).toBe(200);
        expect(await answer.body.text()).toBe('ok');
        expect(hits()).toBe(1);
      } finally {
        await open.close();
      }
    });
  });

  it('refuses an IP literal host, which net.connect never looks up', async () => {
    await withServer(async (port, hits) => {
      const guarded = webhookDispatcher({ allowPrivate: false });
      try {
        await expect(request(`http://127.0.0.1:${port}/`, { dispatcher: guarded })).rejects.toMatchObject({
          code: 'EWEBHOOKFORBIDDEN',
          message: 'webhook host 127.0.0.1 is a loopback address',
        });
        await expect(
          request(`http://[::ffff:7f00:1]:${port}/`, { dispatcher: guarded }),
        ).rejects.toMatchObject({
          code: 'EWEBHOOKFORBIDDEN',
        });
        expect(hits()).toBe(0);
      } finally {
        await guarded.close();
      }
    });
  });

  it('connects to the address the injected resolver judged (a rebinding name is refused)', async () => {
    await withServer(async (port, hits) => {
      const resolve = fakeResolver({ 'rebind.test': [{ address: '127.0.0.1', family: 4 }] });
      const guarded = webhookDispatcher({ allowPrivate: false, resolve });
      try {
        await expect(request(`http://rebind.test:${port}/`, { dispatcher: guarded })).rejects.toMatchObject({
          code: 'EWEBHOOKFORBIDDEN',
        });
        expect(hits()).toBe(0);
      } finally {
        await guarded.close();
      }
      const open = webhookDispatcher({ allowPrivate: true, resolve });
      try {
        const answer = await request(`http://rebind.test:${port}/`, { dispatcher: open });
        expect(answer.statusCode).toBe(200);
        await answer.body.dump();
        expect(hits()).toBe(1);
      } finally {
        await open.close();
      }
    });
  });
});
