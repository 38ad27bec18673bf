import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { RtpSession } from '../src/adapters/voice/rtp.js';
import { report, sleep } from './harness.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

/**
 * The far end, in its own process so its work is not counted: one socket that sends every call a
 * 20 ms PCMU packet (a 440 Hz tone) every 20 ms, and drops what it receives.
 */
const FAR_END = `
const dgram = require('node:dgram');
const ports = JSON.parse(process.argv[1]);
const socket = dgram.createSocket('udp4');
socket.on('message', () => {});
socket.bind(0, '127.0.0.1', () => {
  process.send({ port: socket.address().port });
  const streams = ports.map((port) => ({ port, seq: 0, ts: 0, ssrc: (Math.random() * 2 ** 32) >>> 0 }));
  const payload = Buffer.alloc(160);
  for (let i = 0; i < 160; i++) payload[i] = i % 2 ? 0x1d : 0x9d;
  const start = performance.now();
  let tick = 0;
  const run = () => {
    const due = Math.floor((performance.now() - start) / 20);
    for (; tick <= due; tick++) {
      for (const s of streams) {
        const packet = Buffer.alloc(172);
        packet[0] = 0x80; packet[1] = 0;
        packet.writeUInt16BE(s.seq & 0xffff, 2); packet.writeUInt32BE(s.ts >>> 0, 4); packet.writeUInt32BE(s.ssrc, 8);
        payload.copy(packet, 12);
        s.seq++; s.ts += 160;
        socket.send(packet, s.port, '127.0.0.1');
      }
    }
    setTimeout(run, Math.max(0, start + tick * 20 - performance.now()));
  };
  run();
});
`;

interface Measured {
  cpuPercent: number;
  loopP99Ms: number;
  rssPerCallKb: number;
  received: number;
}

/** Runs `calls` streams for SECONDS against a far end; `open` sets up this side of one call. */
async function measure(
  open: (
    farEndPort: () => number,
  ) => Promise<{ port: number; start(): void; received(): number; close(): Promise<void> }>,
): Promise<Measured> {
  const rssBefore = process.memoryUsage().rss;
  let farPort = 0;
  const sides = [];
  for (let i = 0; i < CALLS; i++) sides.push(await open(() => farPort));
  const far: ChildProcess = spawn(
    process.execPath,
    ['-e', FAR_END, JSON.stringify(sides.map((s) => s.port))],
    {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  farPort = await new Promise<number>((resolve) =>
    far.once('message', (m: { port: number }) => resolve(m.port)),
  );
  for (const side of sides) side.start();
  await sleep(1000); // settle
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await sleep(SECONDS * 1000);
  const used = process.cpuUsage(cpu);
  const elapsed = performance.now() - t0;
  loop.disable();
  const rss = process.memoryUsage().rss;
  const received = sides.reduce((n, side) => n + side.received(), 0);
  far.kill();
  await Promise.all(sides.map((side) => side.close()));
  return {
    cpuPercent: ((used.user + used.system) / 1000 / elapsed) * 100,
    loopP99Ms: loop.percentile(99) / 1e6,
    rssPerCallKb: Math.max(rss - rssBefore, 0) / 1024 / CALLS,
    received,
  };
}

/**
 * `npm run bench media`: the audio path of CALLS answered calls at once (RTP both ways, jitter
 * buffer, G.711, the stereo recording on disk), beside a bare UDP loop that only receives and
 * sends the same packets.
 */
export async function benchMedia(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-media-'));
  const clip = Int16Array.from({ length: 8000 * (SECONDS + 5) }, (_, i) =>
    Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / 8000)),
  );
  try {
    const ours = await measure(async (farEndPort) => {
      const session = await RtpSession.open({
        bindAddress: '127.0.0.1',
        portRange: [46000, 49999],
        recordPath: path.join(dir, `call-${Math.random().toString(36).slice(2)}.wav`),
      });
      // A listener, as the conversation engine is one: the session then hands out every frame.
      session.on('audio', () => {});
      return {
        port: session.port,
        start() {
          session.setRemote('127.0.0.1', farEndPort(), 0);
          session.start();
          void session.play(clip);
        },
        received: () => session.stats.packetsReceived,
        close: () => session.close(),
      };
    });

    const bare = await measure(async (farEndPort) => {
      const socket = dgram.createSocket('udp4');
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      let received = 0;
      socket.on('message', () => {
        received++;
      });
      const packet = Buffer.alloc(172);
      packet[0] = 0x80;
      let timer: NodeJS.Timeout | null = null;
      return {
        port: socket.address().port,
        start() {
          timer = setInterval(() => socket.send(packet, farEndPort(), '127.0.0.1'), 20);
        },
        received: () => received,
        close: async () => {
          if (timer) clearInterval(timer);
          await new Promise<void>((resolve) => socket.close(() => resolve()));
        },
      };
    });

    const expected = CALLS * 50 * (SECONDS + 1);
    report(`Media: ${CALLS} answered calls at once for ${SECONDS} s (RTP both ways, 50 packets/s each)`, [
      [
        'outdial RtpSession',
        `${ours.cpuPercent.toFixed(1)}% of a core, event-loop p99 ${ours.loopP99Ms.toFixed(1)} ms, ${ours.rssPerCallKb.toFixed(0)} KB per call, ${((100 * ours.received) / expected).toFixed(1)}% of packets received`,
      ],
      [
        'bare UDP send/receive',
        `${bare.cpuPercent.toFixed(1)}% of a core, event-loop p99 ${bare.loopP99Ms.toFixed(1)} ms, ${bare.rssPerCallKb.toFixed(0)} KB per call`,
      ],
      [
        'ratio',
        `${(ours.cpuPercent / bare.cpuPercent).toFixed(2)}× the bare loop's CPU; ${(ours.cpuPercent / CALLS).toFixed(3)}% of a core per call`,
      ],
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
