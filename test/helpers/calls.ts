import { expect } from 'vitest';
import { type Account, eventually, type TestApp } from './app.js';

/** Places a single call through the API and answers its callId. */
export async function dialCall(t: TestApp, account: Account, to: string, name?: string): Promise<string> {
  const res = await t.request({
    method: 'POST',
    url: '/api/v1/call/dial',
    key: account.key,
    payload: { to, agentConfigId: account.agentId, ...(name ? { callerDetails: { name } } : {}) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().callId as string;
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
 * Submits a campaign of these numbers (30 calls/s) and waits until it is completed (the app needs
 * its workers); answers the batchId and the ids of its calls.
 */
export async function completedBatch(
  t: TestApp,
  account: Account,
  contacts: Array<{ phoneNumber: string; name?: string }>,
): Promise<{ batchId: string; callIds: string[] }> {
  const batchId = await submitBatch(t, account, { options: { maxCallsPerSecond: 30 }, contacts });
  const done = await eventually<{ recentCalls: Array<{ id: string }> }>(async () => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
      key: account.key,
    });
    return res.json().status === 'completed' ? res.json() : undefined;
  }, 15_000);
  return { batchId, callIds: done.recentCalls.map((call) => call.id) };
}
