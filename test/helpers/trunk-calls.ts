import { expect } from 'vitest';
import { type Account, eventually, type TestApp } from './app.js';

/**
 * Calls through a SIP trunk on a test app, as a user places them: a trunk and an agent made
 * through the admin API, a dial through the public API, and the call's status read back.
 */
export function trunkCalls(t: TestApp, account: Account) {
  const status = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json().data;
  return {
    /** An agent whose calls go through a trunk at 127.0.0.1:`port`; `details` add to its basicDetails. */
    async agent(port: number, trunk: Record<string, unknown> = {}, details: Record<string, unknown> = {}) {
      const created = await t.admin('POST', '/admin/v1/sip-trunks', {
        userId: account.userId,
        name: `sipp ${port}`,
        host: '127.0.0.1',
        port,
        fromNumber: '+14155550100',
        ...trunk,
      });
      expect(created.statusCode).toBe(201);
      const agent = await t.admin('POST', '/admin/v1/agents', {
        userId: account.userId,
        name: 'Phone agent',
        sipTrunkId: created.json().id,
        basicDetails: { agent_name: 'Ava', agentLanguage: 'en-us', prompts: [], ...details },
      });
      expect(agent.statusCode, agent.body).toBe(201);
      return agent.json().id as string;
    },

    /** Dials `to` for the agent; `extra` adds to the dial body. Returns the call id. */
    async dial(agentId: string, to: string, name = 'Jordan', extra: Record<string, unknown> = {}) {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: account.key,
        payload: { agentConfigId: agentId, to, callerDetails: { name }, ...extra },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().callId as string;
    },

    status,

    /** The call's status once it is no longer ONGOING. */
    ended: (callId: string, timeoutMs = 30_000) =>
      eventually(
        async () => {
          const call = await status(callId);
          return call.status === 'ONGOING' ? undefined : call;
        },
        timeoutMs,
        100,
      ),
  };
}
