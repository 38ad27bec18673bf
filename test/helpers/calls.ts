import { expect } from 'vitest';
import { parseCsv } from '../../src/cli/csv.js';
import { type Account, eventually, type TestApp } from './app.js';

/** Places a single call through the API and answers its callId. */
export async function dialCall(t: TestApp, account: Account, to: string, name?: string): Promise<string> {
  return (await dialContact(t, account, to, name ? { name } : undefined)).callId;
}

/** Places a single call with these `callerDetails` and answers its callId and contactId. */
export async function dialContact(
  t: TestApp,
  account: Account,
  to: string,
  callerDetails?: Record<string, unknown>,
): Promise<{ callId: string; contactId: string }> {
  const res = await t.request({
    method: 'POST',
    url: '/api/v1/call/dial',
    key: account.key,
    payload: { to, agentConfigId: account.agentId, ...(callerDetails ? { callerDetails } : {}) },
  });
  expect(res.statusCode, res.body).toBe(200);
  const { callId, contactId } = res.json() as { callId: string; contactId: string };
  return { callId, contactId };
}

/** Waits until the call is no longer ONGOING and answers its final status. */
export function callEnded(t: TestApp, account: Account, callId: string): Promise<string> {
  return eventually(async () => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/status/call?callId=${callId}`,
      key: account.key,
    });
    const status = res.json().status as string;
    return status === 'ONGOING' ? undefined : status;
  });
}

/** Submits a campaign (`body` beside the account's agent and user) and answers its batchId once accepted. */
export async function submitBatch(
  t: TestApp,
  account: Account,
  body: Record<string, unknown>,
): Promise<string> {
  const created = await t.request({
    method: 'POST',
    url: '/api/v1/batch',
    key: account.key,
    payload: { agentId: account.agentId, userId: account.userId, ...body },
  });
  expect(created.statusCode, created.body).toBe(202);
  return created.json().batchId as string;
}

/**
 * Submits a campaign of these numbers (30 calls/s, other `options` as given) and waits until it is
 * completed (the app needs its workers); answers the batchId and the ids of its calls.
 */
export async function completedBatch(
  t: TestApp,
  account: Account,
  contacts: Array<{ phoneNumber: string; name?: string }>,
  options: Record<string, unknown> = {},
  timeoutMs = 15_000,
): Promise<{ batchId: string; callIds: string[] }> {
  const batchId = await submitBatch(t, account, { options: { maxCallsPerSecond: 30, ...options }, contacts });
  const done = await eventually<{ recentCalls: Array<{ id: string }> }>(async () => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
      key: account.key,
    });
    return res.json().status === 'completed' ? res.json() : undefined;
  }, timeoutMs);
  return { batchId, callIds: done.recentCalls.map((call) => call.id) };
}

/** The batch's export (`GET /api/v1/batch/{id}/export`), one record per contact keyed by column. */
export async function exportedContacts(
  t: TestApp,
  account: Account,
  batchId: string,
): Promise<Array<Record<string, string>>> {
  const res = await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: account.key });
  expect(res.statusCode, res.body).toBe(200);
  const [header = [], ...rows] = parseCsv(res.body).map((record) => record.cells);
  return rows.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i] ?? ''])));
}
