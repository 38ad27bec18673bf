import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { muLawToLinear } from '../../src/voice/audio/g711.js';
import { writeSpeechWav } from './audio.js';
import { type Sipp, startSipp } from './sipp.js';

/**
 * The person (or machine) an AI agent calls, for end-to-end tests and `npm run bench agent`:
 * sipp is the callee (SIP, and the speech it plays, made with espeak-ng), and this helper is its
 * ear. The callee's SDP answer points the agent's media at a UDP socket of this helper (the
 * scenario's `[tap_port]`), so it hears the agent's audio and RFC 4733 DTMF on the wire; and it
 * tells sipp when to say its next line over sipp's twin socket (3PCC `sendCmd`/`recvCmd`): the
 * scenario asks (`X-Wait: agent-done` after the line `X-Line`, or `agent-speaking` with
 * `X-After: <ms>`), this helper answers when the agent has answered that line and finished
 * speaking (or has been speaking that long), and sipp plays the next line. So a conversation follows the agent, whatever the machine's load, instead of pauses
 * guessed ahead. Scenarios: test/fixtures/sipp/agent-*.xml.
 */

/** A line of the callee: text spoken by espeak-ng, optionally followed by a 1 kHz beep or silence. */
export type FarEndLine = string | { text: string; beepMs?: number; trailingMs?: number };

export interface FarEndCall {
  /** The SIP Call-ID (sipp's log has it on every message of the call). */
  sipCallId: string;
  /** Our RTP port (from our SDP offer): the agent's packets come from it. */
  rtpPort: number;
  /** When sipp had the call up (its ACK), wall-clock ms; 0 until then. */
  answeredAt: number;
  /**
   * The agent's speech on the wire: spans of wall-clock ms from the first to the end of the last
   * loud packet, pauses under 600 ms (between sentences) joined.
   */
  agentSpeech: Array<{ start: number; end: number }>;
  /** RFC 4733 telephone-events the agent sent, as digits, in order. */
  digits: string;
  /** When each line sipp was told to say was let go, wall-clock ms, in order. */
  cues: number[];
}

export interface FarEnd {
  /** sipp's SIP port on 127.0.0.1: the trunk's port. */
  port: number;
  sipp: Sipp;
  /** sipp's message log (every SIP message with its time). */
  log: string;
  /** Each line's audio: its length, and where its speech starts and ends, in ms. */
  lines: Record<string, { durationMs: number; onsetMs: number; endMs: number }>;
  calls: FarEndCall[];
  /** The first call, once sipp has answered it. */
  call(timeoutMs?: number): Promise<FarEndCall>;
  close(): Promise<void>;
}

/**
 * A barge-in as the wire shows it: the callee's line cued `cue`th (its audio `line`) began while
 * the agent spoke; `spokeAt` is when its speech started, `stoppedAt` when the agent's speech then
 * in progress ended. Null when the agent was not speaking then.
 */
export function interruption(
  call: FarEndCall,
  cue: number,
  line: { onsetMs: number },
): { spokeAt: number; stoppedAt: number } | null {
  const cuedAt = call.cues[cue];
  if (cuedAt === undefined) return null;
  const spokeAt = cuedAt + line.onsetMs;
  const broken = call.agentSpeech.find((span) => span.start <= spokeAt && span.end > spokeAt);
  return broken ? { spokeAt, stoppedAt: broken.end } : null;
}

const LOUD = 200;
const JOIN_MS = 600;

/**
 * Starts a far end: writes `lines` as `<name>.wav` where sipp plays them, opens the ear and the
 * twin socket, and starts sipp with `scenario` for `calls` calls. `quietMs`: how long the agent
 * must be silent before its turn counts as done (sentences of one reply may pause between them).
 */
export async function startFarEnd(
  scenario: string,
  options: {
    lines: Record<string, FarEndLine>;
    calls?: number;
    quietMs?: number;
    timeoutSeconds?: number;
  },
): Promise<FarEnd> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-far-end-'));
  const lines: FarEnd['lines'] = {};
  for (const [name, line] of Object.entries(options.lines)) {
    const { text, beepMs, trailingMs } = typeof line === 'string' ? { text: line } : line;
    lines[name] = writeSpeechWav(path.join(dir, `${name}.wav`), text, {
      beepMs: beepMs ?? 0,
      trailingMs: trailingMs ?? 0,
    });
  }
  const quietMs = options.quietMs ?? 1500;
  const calls: FarEndCall[] = [];
  const byPort = new Map<number, FarEndCall>();
  const lastEvent = new Map<FarEndCall, number>();
  const callOnPort = (port: number) => {
    let call = byPort.get(port);
    if (!call) {
      call = { sipCallId: '', rtpPort: port, answeredAt: 0, agentSpeech: [], digits: '', cues: [] };
      byPort.set(port, call);
      calls.push(call);
    }
    return call;
  };

  // The ear: every call's agent audio arrives here, told apart by its source port.
  const ear = dgram.createSocket('udp4');
  ear.on('message', (packet, from) => {
    if (packet.length < 12) return;
    const call = callOnPort(from.port);
    const at = Date.now();
    const payloadType = (packet[1] ?? 0) & 0x7f;
    const payload = packet.subarray(12 + 4 * ((packet[0] ?? 0) & 0x0f));
    if (payloadType === 0) {
      let sum = 0;
      for (const code of payload) sum += Math.abs(muLawToLinear(code));
      if (payload.length === 0 || sum / payload.length < LOUD) return;
      const last = call.agentSpeech.at(-1);
      if (last && at - last.end <= JOIN_MS) last.end = at + 20;
      else call.agentSpeech.push({ start: at, end: at + 20 });
    } else if (payload.length >= 4) {
      // A telephone-event: one digit per event, an event being one RTP timestamp.
      const timestamp = packet.readUInt32BE(4);
      if (lastEvent.get(call) === timestamp) return;
      lastEvent.set(call, timestamp);
      call.digits += '0123456789*#ABCD'[payload[0] ?? 0] ?? '?';
    }
  });
  await new Promise<void>((resolve) => ear.bind(0, '127.0.0.1', resolve));

  // The twin socket: sipp connects to it and sends one message per sendCmd, ended by ESC.
  const waits: Array<{
    call: FarEndCall;
    since: number;
    ready: () => boolean;
    go: () => void;
  }> = [];
  const twins = new Set<net.Socket>();
  const twin = net.createServer((socket) => {
    twins.add(socket);
    socket.on('close', () => twins.delete(socket));
    socket.on('error', () => {});
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\x1b'); end >= 0; end = buffered.indexOf('\x1b')) {
        const message = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        const header = (name: string) => new RegExp(`^${name}:\\s*(.*?)\\s*$`, 'im').exec(message)?.[1] ?? '';
        const sipCallId = header('Call-ID');
        if (header('X-Event') === 'answered') {
          const call = callOnPort(Number(header('X-Rtp')));
          call.sipCallId = sipCallId;
          call.answeredAt = Date.now();
          continue;
        }
        const call = calls.find((c) => c.sipCallId === sipCallId);
        if (!call) continue;
        const since = Date.now();
        const after = Number(header('X-After') || 0);
        // The callee's line just cued ends this long after `since`.
        const heardUntil = since + (lines[header('X-Line')]?.durationMs ?? 0);
        const ready =
          header('X-Wait') === 'agent-speaking'
            ? () => call.agentSpeech.some((span) => span.start >= since && Date.now() >= span.start + after)
            : () => {
                // The agent's answer: speech after the callee's line ended, or speech it kept up
                // through that line (a barge-in it did not take); then quietMs of quiet.
                const last = call.agentSpeech.at(-1);
                return last !== undefined && last.end > heardUntil && Date.now() - last.end >= quietMs;
              };
        waits.push({
          call,
          since,
          ready,
          go: () => {
            call.cues.push(Date.now());
            socket.write(`Call-ID: ${sipCallId}\r\nX-Cue: go\r\n\r\n\x1b`);
          },
        });
      }
    });
  });
  await new Promise<void>((resolve) => twin.listen(0, '127.0.0.1', resolve));
  const timer = setInterval(() => {
    for (let i = waits.length - 1; i >= 0; i--) {
      const wait = waits[i];
      if (wait?.ready()) {
        waits.splice(i, 1);
        wait.go();
      }
    }
  }, 10);

  const log = path.join(dir, `${scenario}.log`);
  const sipp = await startSipp(scenario, {
    calls: options.calls ?? 1,
    cwd: dir,
    messageLog: log,
    timeoutSeconds: options.timeoutSeconds ?? 120,
    keys: { tap_port: String(ear.address().port) },
    args: ['-3pcc', `127.0.0.1:${(twin.address() as net.AddressInfo).port}`],
  });
  return {
    port: sipp.port,
    sipp,
    log,
    lines,
    calls,
    async call(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const call = calls.find((c) => c.answeredAt > 0);
        if (call) return call;
        if (Date.now() > deadline) throw new Error(`sipp (${scenario}) answered no call`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async close() {
      clearInterval(timer);
      if (sipp.child.exitCode === null) sipp.child.kill('SIGKILL');
      for (const socket of twins) socket.destroy();
      await new Promise<void>((resolve) => twin.close(() => resolve()));
      await new Promise<void>((resolve) => ear.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
