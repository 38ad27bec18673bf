import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallListItem } from '../../src/services/calls/reads.js';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, completedBatch, dialCall } from '../helpers/calls.js';

type Item = CallListItem;

/** GET /api/v1/calls: the key's user's calls, single and campaign ones, filtered and paged. */
describe('GET /api/v1/calls: happy path', () => {
  let t: TestApp;
  let alice: Account;
  /** Alice's single calls, in the order they were dialed: number -> callId. */
  const singles: Array<{ to: string; callId: string }> = [];
  let batchId: string;
  let batchCallIds: string[];

  const get = (url: string) => t.request({ method: 'GET', url, key: alice.key });
  const list = async (query = ''): Promise<Item[]> => {
    const res = await get(`/api/v1/calls${query ? `?${query}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const ids = (items: Item[]) => items.map((item) => item.callId);
  const dial = async (to: string, name = 'Jordan') => {
    const callId = await dialCall(t, alice, to, name);
    singles.push({ to, callId });
    return callId;
  };

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 1000 });
    // One call of each outcome the simulator gives by the number's last digits, and a number
    // called twice; each waits for the previous to end (one ONGOING call per contact).
    for (const to of ['+14155550123', '+14155550001', '+14155550003', '+14155550004', '+14155550123']) {
      await callEnded(t, alice, await dial(to));
    }
    ({ batchId, callIds: batchCallIds } = await completedBatch(
      t,
      alice,
      ['+14155557001', '+14155557002', '+14155557003'].map((phoneNumber, i) => ({
        phoneNumber,
        name: `B${i}`,
      })),
    ));
    expect(batchCallIds).toHaveLength(3);
  });
  afterAll(() => t.close());

  it('lists every call of the user, single and campaign ones, newest first, with what a list shows', async () => {
    const all = await list();
    expect(all).toHaveLength(8);
    expect(new Set(ids(all))).toEqual(new Set([...singles.map((s) => s.callId), ...batchCallIds]));
    const order = [...all].sort((a, b) =>
      a.createdAt === b.createdAt ? (a.callId < b.callId ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
    );
    expect(ids(all)).toEqual(ids(order));
    // The single calls come out in the reverse of the order they were dialed.
    const singleIds = ids(all.filter((item) => item.batchId === null));
    expect(singleIds).toEqual(singles.map((s) => s.callId).reverse());

    const first = singles[0];
    const item = all.find((i) => i.callId === first?.callId);
    expect(item).toEqual({
      callId: first?.callId,
      status: 'COMPLETED',
      phoneNumber: '+14155550123',
      channel: 'phone',
      contactId: expect.stringMatching(/^cnt_/),
      contactName: 'Jordan',
      agentId: alice.agentId,
      batchId: null,
      // The simulator's canned call: no agent conversation, and it failed nobody.
      endedReason: null,
      failureSource: null,
      duration: expect.any(Number),
      createdAt: expect.any(String),
      endedAt: expect.any(String),
    });
    expect(Date.parse(item?.endedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(item?.createdAt ?? ''));
    const fromBatch = all.find((i) => i.batchId === batchId);
    expect(fromBatch).toMatchObject({ agentId: alice.agentId, contactName: expect.stringMatching(/^B\d$/) });
  });

  it('filters by status', async () => {
    const all = await list();
    for (const [status, expected] of [
      ['BUSY', 1],
      ['FAILED', 1],
      ['VOICEMAIL', 1],
    ] as const) {
      const found = await list(`status=${status}`);
      expect(found, status).toHaveLength(expected);
      expect(found.every((item) => item.status === status)).toBe(true);
    }
    const completed = await list('status=COMPLETED');
    expect(ids(completed)).toEqual(ids(all.filter((item) => item.status === 'COMPLETED')));
    expect(completed.length).toBeGreaterThanOrEqual(5);
    expect(await list('status=ONGOING')).toEqual([]);
  });

  it('filters by batch: exactly the batch calls', async () => {
    const found = await list(`batchId=${batchId}`);
    expect(new Set(ids(found))).toEqual(new Set(batchCallIds));
    expect(found.every((item) => item.batchId === batchId)).toBe(true);
  });

  it('filters by number: every call to it, campaign calls too', async () => {
    const twice = await list(`phoneNumber=${encodeURIComponent('+14155550123')}`);
    expect(ids(twice)).toEqual(
      singles
        .filter((s) => s.to === '+14155550123')
        .map((s) => s.callId)
        .reverse(),
    );
    const batchCall = await list(`phoneNumber=${encodeURIComponent('+14155557002')}`);
    expect(batchCall).toHaveLength(1);
    expect(batchCall[0]).toMatchObject({ batchId, phoneNumber: '+14155557002', contactName: 'B1' });
    expect(await list(`phoneNumber=${encodeURIComponent('+14155559999')}`)).toEqual([]);
  });

  it('filters by creation time: from inclusive, to exclusive, and both', async () => {
    const all = await list();
    const middle = all[3]?.createdAt ?? '';
    const late = all[1]?.createdAt ?? '';
    const fromMiddle = await list(`from=${encodeURIComponent(middle)}`);
    expect(ids(fromMiddle)).toEqual(ids(all.filter((item) => item.createdAt >= middle)));
    expect(ids(fromMiddle)).toContain(all[3]?.callId);
    const toMiddle = await list(`to=${encodeURIComponent(middle)}`);
    expect(ids(toMiddle)).toEqual(ids(all.filter((item) => item.createdAt < middle)));
    expect(ids(toMiddle)).not.toContain(all[3]?.callId);
    expect(fromMiddle.length + toMiddle.length).toBe(all.length);
    const window = await list(`from=${encodeURIComponent(middle)}&to=${encodeURIComponent(late)}`);
    expect(ids(window)).toEqual(ids(all.filter((item) => item.createdAt >= middle && item.createdAt < late)));
    expect(window.length).toBeGreaterThan(0);
    // An instant with an offset names the same moment as its UTC spelling.
    const shifted = new Date(Date.parse(middle)).toISOString().replace('Z', '+00:00');
    expect(ids(await list(`from=${encodeURIComponent(shifted)}`))).toEqual(ids(fromMiddle));
    // Filters combine.
    expect(ids(await list(`from=${encodeURIComponent(middle)}&status=COMPLETED`))).toEqual(
      ids(fromMiddle.filter((item) => item.status === 'COMPLETED')),
    );
  });

  it('pages without gaps or repeats while new calls arrive, with X-Next-Cursor and Link', async () => {
    const before = await list();
    const seen: string[] = [];
    let url = '/api/v1/calls?limit=3';
    let pages = 0;
    for (;;) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      const page: Item[] = res.json();
      pages++;
      seen.push(...ids(page));
      const cursor = res.headers['x-next-cursor'];
      if (pages === 1) {
        // Calls created between two pages are newer than every call listed: page 1's, not later ones.
        await dial('+14155550188', 'New one');
        await dial('+14155550189', 'New two');
      }
      if (cursor === undefined) {
        expect(res.headers.link).toBeUndefined();
        break;
      }
      expect(page).toHaveLength(3);
      expect(cursor).toBe(page.at(-1)?.callId);
      const link = String(res.headers.link);
      expect(link).toMatch(/^<\/api\/v1\/calls\?[^>]+>; rel="next"$/);
      const next = new URL(link.slice(1, link.indexOf('>')), 'http://outdial.test');
      expect(next.searchParams.get('limit')).toBe('3');
      expect(next.searchParams.get('cursor')).toBe(cursor);
      url = next.pathname + next.search;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(ids(before));
    const after = await list();
    expect(ids(after).slice(0, 2)).toEqual(
      singles
        .slice(-2)
        .map((s) => s.callId)
        .reverse(),
    );
    expect(ids(after).slice(2)).toEqual(ids(before));
  });

  it('keeps the filters in the Link of the next page', async () => {
    const res = await get('/api/v1/calls?status=COMPLETED&limit=2');
    const link = String(res.headers.link);
    const next = new URL(link.slice(1, link.indexOf('>')), 'http://outdial.test');
    expect(next.searchParams.get('status')).toBe('COMPLETED');
    const second = await get(next.pathname + next.search);
    expect(second.statusCode).toBe(200);
    const all = await list('status=COMPLETED');
    expect([...ids(res.json()), ...ids(second.json())]).toEqual(ids(all).slice(0, 4));
  });
});
