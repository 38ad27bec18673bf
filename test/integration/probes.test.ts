import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DependencyProbes, type ProbeEndpoints } from '../../src/adapters/probes.js';
import { modelDependency, trunkDependency } from '../../src/domain/dependencies.js';
import type { SipTrunk, TrunkDirectory } from '../../src/ports.js';
import {
  type ChatServer,
  downUrl,
  type SttServer,
  startChatServer,
  startSttServer,
  startTtsServer,
  type TtsServer,
} from '../helpers/model-servers.js';
import { freePort } from '../helpers/process.js';
import { type RealtimeServer, startRealtimeServer } from '../helpers/realtime-server.js';
import {
  closedUdpPort,
  type SipOptionsServer,
  startSipOptionsServer,
} from '../helpers/sip-options-server.js';

/** A directory of the trunks given (the SIP transport's port, as the probes are handed it). */
function trunkDirectory(trunks: SipTrunk[]): TrunkDirectory {
  return { forDialing: async (id) => trunks.find((trunk) => trunk.id === id) ?? null };
}

function trunk(id: string, port: number): SipTrunk {
  return {
    id,
    host: '127.0.0.1',
    port,
    username: null,
    password: null,
    fromNumber: '+15550100',
    maxCallsPerSecond: null,
    maxConcurrentCalls: null,
  };
}

const NO_ENDPOINTS: ProbeEndpoints = { llm: null, stt: null, tts: null, realtime: null };

describe('dependency probes against real local servers', () => {
  const opened: DependencyProbes[] = [];
  const probesFor = (endpoints: Partial<ProbeEndpoints>, trunks: SipTrunk[] = []) => {
    const probes = new DependencyProbes({
      endpoints: { ...NO_ENDPOINTS, ...endpoints },
      trunks: trunkDirectory(trunks),
    });
    opened.push(probes);
    return probes;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((probes) => probes.close()));
  });

  describe('llm', () => {
    let chat: ChatServer;
    beforeAll(async () => {
      chat = await startChatServer();
    });
    afterAll(() => chat.close());
    afterEach(() => chat.set({ fail: undefined, hang: false }));
    const endpoint = () => ({ url: chat.url, apiKey: 'sk-probe', model: 'probe-llm' });

    it('resolves on a 1-token streamed completion, asked with max_tokens 1 and stream true', async () => {
      const before = chat.requests.length;
      await expect(
        probesFor({ llm: endpoint() }).probe(modelDependency('llm', endpoint())),
      ).resolves.toBeUndefined();
      const request = chat.requests[before];
      expect(request?.body).toMatchObject({ model: 'probe-llm', max_tokens: 1, stream: true });
      expect(request?.headers.authorization).toBe('Bearer sk-probe');
      expect(chat.requests).toHaveLength(before + 1);
    });

    it('rejects naming the server when nothing listens there', async () => {
      const down = { url: await downUrl(), model: 'probe-llm' };
      await expect(probesFor({ llm: down }).probe(modelDependency('llm', down))).rejects.toThrow(
        /chat model: http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed: .*ECONNREFUSED/,
      );
    });

    it('rejects with the status when the server errs', async () => {
      chat.set({ fail: 500 });
      await expect(probesFor({ llm: endpoint() }).probe(modelDependency('llm', endpoint()))).rejects.toThrow(
        /answered 500: scripted failure 500/,
      );
    });

    it('rejects at the timeout when the server hangs, and the server sees the request given up', async () => {
      chat.set({ hang: true });
      const before = chat.aborted;
      await expect(
        probesFor({ llm: endpoint() }).probe(modelDependency('llm', endpoint()), { timeoutMs: 300 }),
      ).rejects.toThrow(/did not answer within 300 ms/);
      await expect.poll(() => chat.aborted).toBe(before + 1);
    });

    it('rejects a key that is not the configured endpoint', async () => {
      const other = { url: 'http://127.0.0.1:9/v1', model: 'other' };
      await expect(probesFor({ llm: endpoint() }).probe(modelDependency('llm', other))).rejects.toThrow(
        /llm:http:\/\/127\.0\.0\.1:9\/v1 is not a configured llm endpoint/,
      );
    });
  });

  describe('stt', () => {
    let stt: SttServer;
    beforeAll(async () => {
      stt = await startSttServer({ text: '' });
    });
    afterAll(() => stt.close());
    afterEach(() => stt.set({ fail: undefined, hang: false, raw: undefined }));
    const endpoint = () => ({ url: stt.url, model: 'probe-stt' });

    it('resolves on a transcription of 300 ms of silence, even an empty one', async () => {
      const before = stt.requests.length;
      await probesFor({ stt: endpoint() }).probe(modelDependency('stt', endpoint()));
      const request = stt.requests[before];
      expect(request).toMatchObject({
        model: 'probe-stt',
        sampleRate: 8000,
        samples: 2400,
        fileType: 'audio/wav',
      });
      expect(request?.audio.every((sample) => sample === 0)).toBe(true);
    });

    it('rejects naming the server when nothing listens there', async () => {
      const down = { url: await downUrl(), model: 'probe-stt' };
      await expect(probesFor({ stt: down }).probe(modelDependency('stt', down))).rejects.toThrow(
        /stt model: .*\/audio\/transcriptions failed: .*ECONNREFUSED/,
      );
    });

    it('rejects with the status when the server errs, and on an answer that is not JSON', async () => {
      stt.set({ fail: 500 });
      const probes = probesFor({ stt: endpoint() });
      await expect(probes.probe(modelDependency('stt', endpoint()))).rejects.toThrow(/answered 500/);
      stt.set({ fail: undefined, raw: '<html>busy</html>' });
      await expect(probes.probe(modelDependency('stt', endpoint()))).rejects.toThrow(/did not answer JSON/);
    });

    it('rejects at the timeout when the server hangs', async () => {
      stt.set({ hang: true });
      await expect(
        probesFor({ stt: endpoint() }).probe(modelDependency('stt', endpoint()), { timeoutMs: 300 }),
      ).rejects.toThrow(/did not answer within 300 ms/);
    });
  });

  describe('tts', () => {
    let tts: TtsServer;
    beforeAll(async () => {
      tts = await startTtsServer();
    });
    afterAll(() => tts.close());
    afterEach(() => tts.set({ fail: undefined, hang: false }));
    const endpoint = () => ({ url: tts.url, model: 'probe-tts' });

    it('resolves when the first audio of "OK" arrives', async () => {
      const before = tts.requests.length;
      await probesFor({ tts: endpoint() }).probe(modelDependency('tts', endpoint()));
      expect(tts.requests[before]).toMatchObject({ model: 'probe-tts', input: 'OK', responseFormat: 'pcm' });
    });

    it('rejects naming the server when nothing listens there', async () => {
      const down = { url: await downUrl(), model: 'probe-tts' };
      await expect(probesFor({ tts: down }).probe(modelDependency('tts', down))).rejects.toThrow(
        /tts model: .*\/audio\/speech failed: .*ECONNREFUSED/,
      );
    });

    it('rejects with the status when the server errs', async () => {
      tts.set({ fail: 500 });
      await expect(probesFor({ tts: endpoint() }).probe(modelDependency('tts', endpoint()))).rejects.toThrow(
        /answered 500/,
      );
    });

    it('rejects at the timeout when the server hangs', async () => {
      tts.set({ hang: true });
      await expect(
        probesFor({ tts: endpoint() }).probe(modelDependency('tts', endpoint()), { timeoutMs: 300 }),
      ).rejects.toThrow(/did not answer within 300 ms/);
    });
  });

  describe('realtime', () => {
    const servers: RealtimeServer[] = [];
    const start = async (options: Parameters<typeof startRealtimeServer>[0] = {}) => {
      const server = await startRealtimeServer(options);
      servers.push(server);
      return { server, endpoint: { url: server.url, apiKey: 'sk-rt', model: 'probe-rt' } };
    };
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.close()));
    });

    it('resolves on session.created, having opened the socket a call would', async () => {
      const { server, endpoint } = await start();
      await probesFor({ realtime: endpoint }).probe(modelDependency('realtime', endpoint));
      expect(server.connections).toHaveLength(1);
      expect(server.connections[0]?.url).toBe('/v1/realtime?model=probe-rt');
      expect(server.connections[0]?.headers.authorization).toBe('Bearer sk-rt');
    });

    it('rejects naming the failure when nothing listens there', async () => {
      const endpoint = { url: `ws://127.0.0.1:${await freePort()}/v1`, model: 'probe-rt' };
      await expect(
        probesFor({ realtime: endpoint }).probe(modelDependency('realtime', endpoint)),
      ).rejects.toThrow(/could not connect to the realtime server: .*ECONNREFUSED/);
    });

    it('rejects with the status when the server refuses the connection', async () => {
      const { endpoint } = await start({ refuse: 500 });
      await expect(
        probesFor({ realtime: endpoint }).probe(modelDependency('realtime', endpoint)),
      ).rejects.toThrow(/refused the connection with HTTP 500/);
    });

    it('rejects at the timeout when the server never sends session.created', async () => {
      const { server, endpoint } = await start({ silent: true });
      await expect(
        probesFor({ realtime: endpoint }).probe(modelDependency('realtime', endpoint), { timeoutMs: 300 }),
      ).rejects.toThrow(/no session\.created within 300 ms/);
      expect(server.connections).toHaveLength(1);
    });
  });

  describe('trunk', () => {
    let far: SipOptionsServer;
    beforeAll(async () => {
      far = await startSipOptionsServer();
    });
    afterAll(() => far.close());
    afterEach(() => far.set({ status: 200, reason: undefined }));

    it('resolves when the trunk answers OPTIONS, which carries the headers RFC 3261 asks for', async () => {
      const before = far.requests.length;
      const target = trunk('trk_up', far.port);
      await probesFor({}, [target]).probe(trunkDependency(target));
      const { message } = far.requests[before] ?? {};
      expect(message?.method).toBe('OPTIONS');
      expect(message?.uri).toBe(`sip:127.0.0.1:${far.port}`);
      const header = (name: string) => message?.headers.get(name)?.[0] ?? '';
      expect(header('via')).toMatch(/^SIP\/2\.0\/UDP 127\.0\.0\.1:\d+;branch=z9hG4bK[0-9a-f]+;rport$/);
      expect(header('from')).toMatch(/;tag=[0-9a-f]+$/);
      expect(header('call-id')).not.toBe('');
      expect(header('cseq')).toBe('1 OPTIONS');
      expect(header('max-forwards')).toBe('70');
      expect(header('content-length')).toBe('0');
    });

    it('counts a 401 or a 404 as a trunk that is there', async () => {
      const target = trunk('trk_auth', far.port);
      far.set({ status: 401 });
      await probesFor({}, [target]).probe(trunkDependency(target));
      far.set({ status: 404 });
      await probesFor({}, [target]).probe(trunkDependency(target));
    });

    it('rejects with the status on a 503', async () => {
      const target = trunk('trk_busy', far.port);
      far.set({ status: 503 });
      await expect(probesFor({}, [target]).probe(trunkDependency(target))).rejects.toThrow(
        `SIP trunk trk_busy (127.0.0.1:${far.port}) answered OPTIONS with 503 Service Unavailable`,
      );
    });

    it('retransmits on timer E, and rejects at the timeout when nothing answers', async () => {
      far.set({ status: null });
      const before = far.requests.length;
      const target = trunk('trk_silent', far.port);
      await expect(
        probesFor({}, [target]).probe(trunkDependency(target), { timeoutMs: 1700 }),
      ).rejects.toThrow(`SIP trunk trk_silent (127.0.0.1:${far.port}): no answer to OPTIONS within 1700 ms`);
      // Sent at 0, then 500 ms later, then 1000 ms after that (T1, doubling): three copies of one request.
      await expect.poll(() => far.requests.length - before).toBe(3);
      const sent = far.requests.slice(before);
      expect(new Set(sent.map(({ raw }) => raw)).size).toBe(1);
    });

    it('rejects at the timeout when nothing listens on the port', async () => {
      const target = trunk('trk_gone', await closedUdpPort());
      await expect(
        probesFor({}, [target]).probe(trunkDependency(target), { timeoutMs: 600 }),
      ).rejects.toThrow(/no answer to OPTIONS within 600 ms/);
    });

    it('rejects a trunk the directory does not have', async () => {
      await expect(probesFor({}, []).probe(trunkDependency({ id: 'trk_none' }))).rejects.toThrow(
        'trunk:trk_none: no such SIP trunk',
      );
    });
  });
});
