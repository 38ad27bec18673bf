import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { type SharedHosts, sharedHosts } from '../helpers/hosts.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';
import { type Child, startCli } from '../helpers/process.js';

interface Held {
  owner: string;
  answered_at: Date;
  ended_at: Date;
}

/** The most of these calls up at one moment (an end at the same instant as a start comes first). */
function mostAtOnce(calls: Held[]): number {
  const moments = calls.flatMap((call) => [
    { at: new Date(call.ended_at).getTime(), step: -1 },
    { at: new Date(call.answered_at).getTime(), step: 1 },
  ]);
  moments.sort((a, b) => a.at - b.at || a.step - b.step);
  let up = 0;
  let most = 0;
  for (const moment of moments) {
    up += moment.step;
    most = Math.max(most, up);
  }
  return most;
}

/** The process id in a dial record's owner (`host:pid:...`). */
const pidOf = (owner: string) => Number(owner.split(':')[1]);

/**
 * Issue 24 §7 across processes: two workers share one PostgreSQL and Redis, one allowed a single
 * AI call (OUTDIAL_MAX_AI_CALLS=1), the other eight. A campaign of simulated AI calls (an LLM
 * configured: each answered call is a conversation in text, about a second long) is served by
 * both: the full worker never holds more than its one call at once, claims nothing past it, and
 * the other places the rest. Every contact is called once, and no call is answered only to end
 * `overloaded`. Read from what the system shows: the calls through the API, and each call's dial
 * record (its owner, answer and end) in the shared database.
 */
describe('two workers, one at its AI-call bound', () => {
  let hosts: SharedHosts | undefined;
  let chat: ChatServer | undefined;
  afterAll(async () => {
    await hosts?.stop();
    await chat?.close();
  });

  it('the full worker claims no more than its bound, the other takes the rest, each contact is called once', async () => {
    chat = await startChatServer({
      respond: (record) =>
        isPersona(record)
          ? 'Sure, what is it about?'
          : // The agent's model takes a moment: each call stays up long enough to overlap others.
            { text: 'Thank you for your time. Goodbye!', firstTokenMs: 800 },
    });
    hosts = await sharedHosts(6);
    const { base, children } = hosts;
    const env = (extra: Record<string, string>) =>
      (hosts as SharedHosts).env({
        ...simulatedAiEnv(chat as ChatServer),
        OUTDIAL_DEMO_MINUTES: '1000',
        ...extra,
      });
    const api = startCli(['api'], env({}));
    children.push(api);
    await api.waitFor(/API key:\s+(\S+)/, 60_000);
    const key = api.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
    const userId = api.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const agentId = api.output().match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    const full: Child = startCli(['worker'], env({ OUTDIAL_MAX_AI_CALLS: '1' }));
    const roomy: Child = startCli(['worker'], env({ OUTDIAL_MAX_AI_CALLS: '8' }));
    children.push(full, roomy);
    for (const worker of [full, roomy]) await worker.waitFor(/worker running/, 60_000);

    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const numbers = Array.from({ length: 10 }, (_, i) => `+1415555${String(4000 + i)}`);
    const submitted = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        agentId,
        userId,
        contacts: numbers.map((phoneNumber) => ({ phoneNumber, name: 'Jordan' })),
        // Without the bound, one pass of either worker would claim five at once.
        options: { maxCallsPerSecond: 5 },
      }),
    });
    expect(submitted.status, await submitted.clone().text()).toBe(202);
    const { batchId } = (await submitted.json()) as { batchId: string };

    await eventually(
      async () => {
        const res = await fetch(`${base}/api/v1/batch/check-status?batchId=${batchId}`, { headers });
        return ((await res.json()) as { status: string }).status === 'completed' ? true : undefined;
      },
      90_000,
      200,
    );

    // Each contact called once, each call a conversation served to its end: none refused after
    // its answer as overloaded (which would also have queued its contact for a second call).
    const list = await fetch(`${base}/api/v1/calls?batchId=${batchId}`, { headers });
    expect(list.status).toBe(200);
    const calls = (await list.json()) as Array<{
      phoneNumber: string;
      status: string;
      endedReason: string | null;
    }>;
    expect(calls.map((call) => call.phoneNumber).sort()).toEqual(numbers);
    for (const call of calls) expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });

    // Who held each call, from its answer to its end: only the two workers.
    const held = (
      await sql<Held>`
        select d.owner, d.answered_at, d.ended_at from dials d join calls c on c.id = d.call_id
        where c.batch_id = ${batchId}`.execute(hosts.handle.db)
    ).rows;
    expect(held).toHaveLength(numbers.length);
    const byFull = held.filter((call) => pidOf(call.owner) === full.process.pid);
    const byRoomy = held.filter((call) => pidOf(call.owner) === roomy.process.pid);
    expect(byFull.length + byRoomy.length).toBe(numbers.length);
    // The full worker never held two AI calls at once; the other, with room, held several.
    expect(mostAtOnce(byFull)).toBeLessThanOrEqual(1);
    expect(mostAtOnce(byRoomy)).toBeGreaterThan(1);
    expect(byRoomy.length).toBeGreaterThan(byFull.length);
  }, 180_000);
});
