import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  createTestStorage,
  DATABASE_TEST_URL,
  STORE,
  type TestStorage,
} from '../helpers/app.js';
import { downUrl, type ModelServers, startModelServers } from '../helpers/model-servers.js';
import { type Child, childEnv, freePort, runCli, startCli } from '../helpers/process.js';
import { type RealtimeServer, startRealtimeServer } from '../helpers/realtime-server.js';
import { Receiver } from '../helpers/receiver.js';
import { type SipOptionsServer, startSipOptionsServer } from '../helpers/sip-options-server.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/** A line of `outdial doctor`'s text report: status, name, what it found, and the fix. */
interface Line {
  status: string;
  name: string;
  detail: string;
  fix: string | undefined;
}

function lines(stdout: string): Line[] {
  return stdout
    .trim()
    .split('\n')
    .filter((line) => !line.startsWith('doctor: '))
    .map((line) => {
      const match =
        /^(ok|warn|fail|skip)\s+(database|cache|llm|stt-tts|realtime|trunk \S+|trunks|public-url|webhook-egress|disk)\s+(.*)$/.exec(
          line,
        );
      if (!match) throw new Error(`not a report line: ${line}`);
      const [detail, fix] = (match[3] ?? '').split(' | fix: ');
      return { status: match[1] ?? '', name: match[2] ?? '', detail: detail ?? '', fix };
    });
}

describe(`outdial doctor (${STORE})`, () => {
  const tempDir = tempDirs('outdial-doctor-');
  let storage: TestStorage | null = null;
  let models: ModelServers;
  let realtime: RealtimeServer;
  let trunk: SipOptionsServer;
  let receiver: Receiver;
  let server: Child | null = null;
  let env: NodeJS.ProcessEnv;
  let trunkId: string;

  beforeAll(async () => {
    models = await startModelServers({
      // The transcript is the server's own answer, not pocketsphinx's: the round trip's protocol is
      // real (the synthesized audio is uploaded, below), and a busy machine does not slow it down.
      stt: { text: 'hello this is a test' },
      chat: {
        // A model with tool calling: it calls the tool it is given when the request requires one.
        respond: (request) =>
          request.body.tool_choice === 'required'
            ? { toolCalls: [{ name: request.tools?.[0]?.function.name ?? '', arguments: { zone: 'UTC' } }] }
            : 'OK.',
      },
    });
    realtime = await startRealtimeServer();
    trunk = await startSipOptionsServer();
    receiver = await Receiver.start();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      storage = await createTestStorage('postgres');
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    env = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: tempDir(),
      OUTDIAL_PUBLIC_URL: base,
      DATABASE_URL: databaseUrl,
      OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
      OUTDIAL_SEED_DEMO: 'false',
      OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      OUTDIAL_REALTIME_URL: realtime.url,
      ...models.env,
    });
    server = startCli(['serve'], env);
    await server.waitFor(/listening on/, 90_000);
    // A user whose agent dials through a trunk, made through the admin API.
    const admin = async (path: string, body: Record<string, unknown>) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const reply = (await res.json()) as { id: string };
      expect(res.status, JSON.stringify(reply)).toBe(201);
      return reply;
    };
    const user = await admin('/admin/v1/users', { name: 'Doctor' });
    trunkId = (
      await admin('/admin/v1/sip-trunks', {
        userId: user.id,
        name: 'carrier',
        host: '127.0.0.1',
        port: trunk.port,
        fromNumber: '+14155550100',
      })
    ).id;
    await admin('/admin/v1/agents', {
      userId: user.id,
      name: 'Trunk agent',
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en-us', prompts: [] },
      sipTrunkId: trunkId,
    });
    // The embedded database opens in one process at a time: on PGlite, doctor runs with the server stopped.
    if (STORE === 'pglite') {
      await server.stop();
      server = null;
    }
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await Promise.all([models?.close(), realtime?.close(), trunk?.close(), receiver?.close()]);
    await storage?.dispose();
  });

  /** Doctor with Redis on the PostgreSQL run (the deployment shape it is used in), none on PGlite. */
  const doctor = (args: string[]) =>
    runCli(['doctor', ...args], {
      ...env,
      ...(STORE === 'postgres' ? { REDIS_URL: 'redis://127.0.0.1:6379' } : {}),
    });

  it('says ok for every dependency that answers, and exits 0', async () => {
    // The timeout only bounds a failure: pocketsphinx behind the STT server is slow on a busy machine.
    const { code, stdout, stderr } = await doctor([
      '--webhook-url',
      receiver.url('/doctor'),
      '--timeout',
      '60000',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = lines(stdout);
    expect(report.map((line) => line.name)).toEqual([
      'database',
      'cache',
      'llm',
      'stt-tts',
      'realtime',
      `trunk ${trunkId}`,
      'public-url',
      'webhook-egress',
      'disk',
    ]);
    const byName = (name: string) => report.find((line) => line.name === name);
    for (const line of report) {
      // On PGlite the server is stopped (see beforeAll): its URL answers nothing, a warning only.
      if (STORE === 'pglite' && line.name === 'public-url') continue;
      expect(line, `${line.name}: ${line.detail}`).toMatchObject({ status: 'ok', fix: undefined });
    }
    expect(byName('database')?.detail).toMatch(
      new RegExp(`^${STORE} answered in \\d+ ms; migrations up to date$`),
    );
    expect(byName('cache')?.detail).toMatch(STORE === 'postgres' ? /^Redis answered PONG/ : /^in-memory/);
    expect(byName('llm')?.detail).toMatch(/^test-llm called check_time in \d+ ms$/);
    expect(byName('stt-tts')?.detail).toMatch(/^heard "[a-z' ]+" \(tts openai:test-tts, stt openai:test-stt/);
    expect(byName(`trunk ${trunkId}`)?.detail).toMatch(
      new RegExp(`^carrier at 127\\.0\\.0\\.1:${trunk.port} answered OPTIONS with 200 OK in \\d+ ms$`),
    );
    if (STORE === 'pglite') {
      expect(byName('public-url')).toMatchObject({
        status: 'warn',
        fix: expect.stringMatching(/start outdial serve/),
      });
    } else {
      expect(byName('public-url')?.detail).toMatch(/\/api\/v1\/health answered 401 in \d+ ms$/);
    }
    expect(stdout).toMatch(/\ndoctor: (ok|warn) \(\d ok, [01] warn, 0 fail, 0 skip\)\n$/);

    // What the dependencies received, as they saw it.
    const chat = models.chat.requests.at(-1);
    expect(chat?.body).toMatchObject({ model: 'test-llm', stream: true, tool_choice: 'required' });
    expect(chat?.tools?.[0]?.function.name).toBe('check_time');
    expect(models.tts.requests.at(-1)?.input).toBe('hello, this is a test');
    expect(models.stt.requests.at(-1)?.text).not.toBe('');
    // What was transcribed is what the speech server synthesized: a second or so of audio.
    expect(models.stt.requests.at(-1)?.samples).toBeGreaterThan(
      (models.stt.requests.at(-1)?.sampleRate ?? 0) / 2,
    );
    expect(realtime.connections.length).toBeGreaterThan(0);
    expect(trunk.requests.at(-1)?.message.method).toBe('OPTIONS');
    expect(receiver.on('/doctor').length).toBe(1);
  });

  it('warns when the model answers without calling the tool', async () => {
    models.chat.set({ respond: () => 'It is noon.' });
    const { code, stdout } = await doctor(['--webhook-url', receiver.url('/doctor'), '--timeout', '60000']);
    expect(code).toBe(0);
    expect(lines(stdout).find((line) => line.name === 'llm')).toMatchObject({
      status: 'warn',
      detail: "test-llm answered but called no tool (agents' tools, end and transfer need tool calls)",
      fix: expect.stringMatching(/tool calling/),
    });
  });

  it('fails on a model server that is down, a trunk that does not answer and a webhook URL unreachable, naming each with its fix; --json says the same', async () => {
    const webhookUrl = `${await downUrl()}/hook`;
    await models.chat.close();
    await trunk.close();
    const text = await doctor(['--webhook-url', webhookUrl, '--timeout', '60000']);
    expect(text.code).toBe(1);
    const report = lines(text.stdout);
    expect(report.find((line) => line.name === 'llm')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /^chat model: http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed: .*ECONNREFUSED/,
      ),
      fix: `start the model server at ${env.OUTDIAL_LLM_URL}, or correct OUTDIAL_LLM_URL`,
    });
    expect(report.find((line) => line.name === `trunk ${trunkId}`)).toMatchObject({
      status: 'fail',
      detail: `carrier at 127.0.0.1:${trunk.port}: no answer to OPTIONS within 4000 ms`,
      fix: expect.stringContaining(`outdial sip-trunks update ${trunkId}`),
    });
    expect(report.find((line) => line.name === 'webhook-egress')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(new RegExp(`^${webhookUrl}: .*ECONNREFUSED`)),
      fix: expect.stringMatching(/is reachable from this host/),
    });
    expect(text.stdout).toMatch(/\ndoctor: fail \(\d ok, \d warn, 3 fail, 0 skip\)\n$/);

    const json = await doctor(['--json', '--webhook-url', webhookUrl, '--timeout', '60000']);
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.stdout) as {
      status: string;
      checks: Array<{ name: string; status: string; detail: string; fix?: string; latencyMs?: number }>;
    };
    expect(parsed.status).toBe('fail');
    expect(parsed.checks.map((check) => check.name)).toEqual(report.map((line) => line.name));
    for (const check of parsed.checks) {
      expect(
        Object.keys(check).every((key) => ['name', 'status', 'detail', 'fix', 'latencyMs'].includes(key)),
      ).toBe(true);
      expect(['ok', 'warn', 'fail', 'skip']).toContain(check.status);
      expect(typeof check.detail).toBe('string');
      if (check.status !== 'ok') expect(typeof check.fix).toBe('string');
      if (check.latencyMs !== undefined) expect(check.latencyMs).toBeGreaterThanOrEqual(0);
    }
    expect(parsed.checks.filter((check) => check.status === 'fail').map((check) => check.name)).toEqual([
      'llm',
      `trunk ${trunkId}`,
      'webhook-egress',
    ]);
    expect(parsed.checks.find((check) => check.name === 'database')).toMatchObject({
      status: 'ok',
      latencyMs: expect.any(Number),
    });
    // Two runs, each waiting 4 s for the trunk's OPTIONS: the bound only stops a hang.
  }, 90_000);
});
