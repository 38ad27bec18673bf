import os from 'node:os';
import { type FarEnd, interruption, startFarEnd } from '../test/helpers/far-end.js';
import { startChatServer, startSttServer, startTtsServer } from '../test/helpers/model-servers.js';
import { report, sleep, startServerProcess } from './harness.js';

/** Concurrent AI calls per step of the ramp (`BENCH_AGENT_CALLS=5,10,20`). */
const STEPS = (process.env.BENCH_AGENT_CALLS ?? '2,4,8,12,16,24,32').split(',').map(Number);
const STORE = process.env.BENCH_AGENT_STORE === 'pglite' ? 'pglite' : 'postgres';
/** The model servers' fixed delays (issue 14, item 6). */
const STT_MS = 100;
const FIRST_TOKEN_MS = 150;
const FIRST_AUDIO_BYTE_MS = 80;
/** Targets: the engine's own share of voice-to-voice (p95) and the barge-in stop time (p95). */
const ENGINE_TARGET_MS = 50;
const BARGE_IN_TARGET_MS = 300;
/** The agent's interruption.minSpeechMs: speech over the agent shorter than this is not a barge-in. */
const MIN_SPEECH_MS = 300;
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
/**
 * Silence after each callee line (`BENCH_AGENT_TRAILING_MS`, default 0). sipp's rtp_stream stops
 * sending when its file ends, so by default the far end goes quiet on the wire after its words
 * and the end of the turn waits for the jitter buffer's playout; a phone keeps sending (silence),
 * which this emulates.
 */
const TRAILING_MS = Number(process.env.BENCH_AGENT_TRAILING_MS ?? 0);

/** What the callee says (sipp plays it, made with espeak-ng): scenario agent-barge-in. */
const LINES = {
  hello: 'Hello?',
  line1: 'Yes, tell me about it.',
  line2: 'Wait, I have a question.',
  line3: 'No, that is all, thank you.',
};
/** The agent's reply to the callee's first line: long enough that line2 lands in the middle of it. */
const LONG_REPLY =
  'Sure. We help teams call their customers with an assistant that listens and answers. ' +
  'It books meetings, answers questions, and hands the call to a person when asked. ' +
  'Most teams start with a small campaign and grow from there.';

interface Turn {
  endpointingMs: number | null;
  sttMs: number | null;
  llmFirstTokenMs: number | null;
  ttsFirstByteMs: number | null;
  voiceToVoiceMs: number | null;
}

interface Step {
  calls: number;
  completed: number;
  voiceToVoice: number[];
  /** Voice-to-voice as the far end measured it on the wire. */
  onWire: number[];
  engine: number[];
  /** The stored turns, for the stages' medians. */
  turns: Turn[];
  bargeIn: number[];
  /** Calls whose agent was not speaking when the callee broke in. */
  missed: number;
  /** The server's CPU time per call, its idle work taken off. */
  cpuMsPerCall: number;
  /** The calls' mean connected time, in seconds. */
  callSeconds: number;
  wallSeconds: number;
}

/**
 * `npm run bench agent`: AI calls at once through sipp (the callee: SIP, and its lines played
 * when the agent has finished, see test/helpers/far-end.ts), `outdial serve` in its own process
 * with the LLM engine on local model servers at fixed delays (STT 100 ms, first token 150 ms,
 * first audio byte 80 ms). Each call: "Hello?", the agent's greeting, a question, a long answer
 * the callee interrupts after a second (barge-in), a short answer, a goodbye with end_call.
 * Per step: voice-to-voice p50/p95 from the stored calls' turns; the engine's own share
 * (voice-to-voice minus endpointing, STT, first token and first audio byte; target 50 ms p95);
 * the barge-in stop time seen on the wire (target 300 ms p95); the server's CPU per call. The
 * ramp reports the most calls at once within both targets.
 */
export async function benchAgent(): Promise<void> {
  const chat = await startChatServer({
    firstTokenMs: FIRST_TOKEN_MS,
    respond: (request) => {
      const said = request.messages.filter((message) => message.role === 'user').length;
      if (said <= 1) return LONG_REPLY;
      if (said === 2) return 'Of course. What would you like to know?';
      return { text: 'Thank you for your time. Goodbye.', toolCalls: [{ name: 'end_call' }] };
    },
  });
  // A fixed transcript after a fixed delay: the STT stage costs exactly its 100 ms.
  const stt = await startSttServer({ delayMs: STT_MS, text: 'yes tell me more' });
  const tts = await startTtsServer({ firstByteMs: FIRST_AUDIO_BYTE_MS });
  const server = await startServerProcess(STORE, {
    OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
    OUTDIAL_ENCRYPTION_KEY: 'bench-encryption-key-0123456789-0123456789-abcdef',
    OUTDIAL_SIP_BIND: '127.0.0.1',
    OUTDIAL_SIP_PORT: '0',
    OUTDIAL_RTP_PORTS: '30000-39999',
    OUTDIAL_LLM_URL: chat.url,
    OUTDIAL_LLM_MODEL: 'bench-model',
    OUTDIAL_STT_URL: stt.url,
    OUTDIAL_TTS_URL: tts.url,
    // The ramp measures past the default bound of 8 AI calls (which these figures chose): the
    // bench's single dials must all be served, not ended as overloaded.
    OUTDIAL_MAX_AI_CALLS: '64',
  });
  const api = async (method: string, url: string, body?: unknown, key = ADMIN_TOKEN) => {
    const res = await fetch(`${server.base}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const user = await api('POST', '/admin/v1/users', {
    name: 'bench',
    minutes: 1_000_000,
    maxConcurrentCalls: 10_000,
  });
  const key = String((await api('POST', '/admin/v1/keys', { userId: user.id })).key);

  const steps: Step[] = [];
  const loadBefore = os.loadavg()[0] ?? 0;
  try {
    for (const calls of STEPS) {
      const lines = Object.fromEntries(
        Object.entries(LINES).map(([name, text]) => [name, { text, trailingMs: TRAILING_MS }]),
      );
      const far = await startFarEnd('agent-barge-in', { lines, calls, timeoutSeconds: 300 });
      try {
        steps.push(await runStep(calls, far, api, { userId: String(user.id), key }, server.cpuMs));
      } finally {
        await far.close();
      }
      // Up the ramp until calls fail or the machine is overloaded (a voice-to-voice p95 of 3 s).
      const last = steps.at(-1);
      if (!last || last.completed < last.calls || (percentile(last.voiceToVoice, 95) ?? 0) > 3000) break;
    }
  } finally {
    await server.close();
    await Promise.all([chat.close(), stt.close(), tts.close()]);
  }

  const most = (ok: (step: Step) => boolean) =>
    String(steps.filter((step) => step.completed === step.calls && ok(step)).at(-1)?.calls ?? 'none');
  const p95 = (values: number[]) => percentile(values, 95) ?? Number.POSITIVE_INFINITY;
  report(
    `Agent: AI calls at once through sipp${TRAILING_MS > 0 ? ` (its lines followed by ${TRAILING_MS} ms of silence on the wire)` : ''}, model servers at STT ${STT_MS} ms, first token ${FIRST_TOKEN_MS} ms, first audio byte ${FIRST_AUDIO_BYTE_MS} ms (${os.cpus().length} cores, ${STORE}; load average ${loadBefore.toFixed(1)} before, ${(os.loadavg()[0] ?? 0).toFixed(1)} after)`,
    [
      ...steps.map((step): [string, string] => [
        `${step.calls} calls`,
        [
          `${step.completed}/${step.calls} completed in ${step.wallSeconds.toFixed(0)} s`,
          `voice-to-voice p50 ${fmt(percentile(step.voiceToVoice, 50))} p95 ${fmt(percentile(step.voiceToVoice, 95))} ms (${step.voiceToVoice.length} turns)`,
          `on the far end's wire p50 ${fmt(percentile(step.onWire, 50))} p95 ${fmt(percentile(step.onWire, 95))} ms`,
          `engine share p50 ${fmt(percentile(step.engine, 50))} p95 ${fmt(percentile(step.engine, 95))} ms (target ${ENGINE_TARGET_MS})`,
          `stage medians: endpointing ${stage(step, 'endpointingMs')}, STT ${stage(step, 'sttMs')}, first token ${stage(step, 'llmFirstTokenMs')}, first audio byte ${stage(step, 'ttsFirstByteMs')} ms`,
          `barge-in stop p95 ${fmt(percentile(step.bargeIn, 95))} ms (target ${BARGE_IN_TARGET_MS}; ${step.bargeIn.length} barge-ins, ${step.missed} missed)`,
          `CPU ${step.cpuMsPerCall.toFixed(0)} ms per call of ${step.callSeconds.toFixed(0)} s (${((100 * step.cpuMsPerCall) / 1000 / Math.max(step.callSeconds, 1)).toFixed(1)}% of a core while up)`,
        ].join('; '),
      ]),
      [
        'baseline',
        `the model delays alone: endpointing (500 ms by default) + ${STT_MS + FIRST_TOKEN_MS + FIRST_AUDIO_BYTE_MS} ms`,
      ],
      ['most calls, engine share p95 within target', most((step) => p95(step.engine) <= ENGINE_TARGET_MS)],
      [
        'most calls, barge-in stop p95 within target',
        most((step) => p95(step.bargeIn) <= BARGE_IN_TARGET_MS),
      ],
      ['most calls within both targets', most(withinTargets)],
    ],
  );
}

/** The median of one stage over a step's turns. */
function stage(step: Step, key: keyof Turn): string {
  return fmt(
    percentile(
      step.turns.flatMap((turn) => (turn[key] === null ? [] : [turn[key]])),
      50,
    ),
  );
}

function withinTargets(step: Step): boolean {
  return (
    step.completed === step.calls &&
    (percentile(step.engine, 95) ?? Number.POSITIVE_INFINITY) <= ENGINE_TARGET_MS &&
    (percentile(step.bargeIn, 95) ?? Number.POSITIVE_INFINITY) <= BARGE_IN_TARGET_MS
  );
}

type Api = (method: string, url: string, body?: unknown, key?: string) => Promise<Record<string, unknown>>;

/** `calls` AI calls at once to `far`; waits until all have ended and reads what they stored. */
async function runStep(
  calls: number,
  far: FarEnd,
  api: Api,
  account: { userId: string; key: string },
  cpuMs: () => number,
): Promise<Step> {
  const trunk = await api('POST', '/admin/v1/sip-trunks', {
    userId: account.userId,
    name: `sipp ${far.port}`,
    host: '127.0.0.1',
    port: far.port,
    fromNumber: '+14155550100',
  });
  const agent = await api('POST', '/admin/v1/agents', {
    userId: account.userId,
    name: 'Bench agent',
    sipTrunkId: trunk.id,
    basicDetails: {
      agent_name: 'Ava',
      agentLanguage: 'en-us',
      instructions: 'You are Ava from Acme. Answer in one or two short sentences.',
      firstMessage: 'Hi {{name}}, this is Ava from Acme. Do you have a minute?',
      interruption: { minSpeechMs: MIN_SPEECH_MS, ignoreWords: ['yeah', 'uh-huh', 'okay'] },
    },
  });
  // The process's own idle work (its workers' polls), taken off the calls' CPU below.
  const idleFrom = cpuMs();
  await sleep(3000);
  const idlePerMs = (cpuMs() - idleFrom) / 3000;
  const cpuBefore = cpuMs();
  const started = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < calls; i++) {
    const dialed = await api(
      'POST',
      '/api/v1/call/dial',
      {
        agentConfigId: agent.id,
        to: `+1415556${String(i).padStart(4, '0')}`,
        callerDetails: { name: 'Jordan' },
      },
      account.key,
    );
    ids.push(String(dialed.callId));
  }
  const views: Array<Record<string, unknown>> = [];
  for (const id of ids) {
    for (;;) {
      const view = (await api('GET', `/api/v1/call/check-status?callId=${id}`, undefined, account.key))
        .data as Record<string, unknown>;
      if (view.status !== 'ONGOING' && view.status !== 'QUEUED') {
        views.push(view);
        break;
      }
      if (Date.now() - started > 300_000) throw new Error(`call ${id} did not end in 300 s`);
      await sleep(500);
    }
  }
  const wallSeconds = (Date.now() - started) / 1000;
  const cpuMsPerCall = (cpuMs() - cpuBefore - idlePerMs * (Date.now() - started)) / calls;
  const callSeconds =
    views.reduce((sum, view) => sum + (typeof view.duration === 'number' ? view.duration : 0), 0) / calls;
  await far.sipp.done;

  const turns = views.flatMap((view) => (Array.isArray(view.turns) ? (view.turns as Turn[]) : []));
  const voiceToVoice = turns.flatMap((turn) => (turn.voiceToVoiceMs === null ? [] : [turn.voiceToVoiceMs]));
  const engine = turns.flatMap((turn) =>
    turn.voiceToVoiceMs === null
      ? []
      : [
          turn.voiceToVoiceMs -
            (turn.endpointingMs ?? 0) -
            (turn.sttMs ?? 0) -
            (turn.llmFirstTokenMs ?? 0) -
            (turn.ttsFirstByteMs ?? 0),
        ],
  );
  // Barge-in, on the wire: line2 starts (its cue, plus espeak-ng's lead-in) while the agent speaks;
  // the stop time runs from when that speech has lasted minSpeechMs (the earliest the agent may
  // yield) to the agent's last loud packet.
  const bargeIn: number[] = [];
  let missed = 0;
  for (const call of far.calls) {
    const cut = interruption(call, 1, far.lines.line2 ?? { onsetMs: 0 });
    if (cut) bargeIn.push(cut.stoppedAt - cut.spokeAt - MIN_SPEECH_MS);
    else missed++;
  }
  // Voice-to-voice as the far end hears it: the end of each callee line's speech (its cue plus
  // where the speech ends in its audio) to the start of the agent's next speech.
  const onWire: number[] = [];
  for (const call of far.calls) {
    for (const [index, name] of ['line1', 'line2', 'line3'].entries()) {
      const cue = call.cues[index];
      const line = far.lines[name];
      if (cue === undefined || !line) continue;
      const ended = cue + line.endMs;
      const answer = call.agentSpeech.find((span) => span.start > ended);
      if (answer) onWire.push(answer.start - ended);
    }
  }
  const completed = views.filter(
    (view) => view.status === 'COMPLETED' && view.endedReason === 'agent-ended',
  ).length;
  return {
    calls,
    completed,
    voiceToVoice,
    onWire,
    engine,
    turns,
    bargeIn,
    missed,
    cpuMsPerCall,
    callSeconds,
    wallSeconds,
  };
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
}

const fmt = (value: number | null) => (value === null ? '—' : value.toFixed(0));
