import { describe, expect, it } from 'vitest';
import { buildVoiceModels, modelEndpoints } from '../../src/adapters/models/index.js';
import { SileroSpeechDetector } from '../../src/adapters/models/vad.js';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { loadConfig } from '../../src/config.js';
import { startChatServer, startSttServer, startTtsServer } from '../helpers/model-servers.js';

/** buildVoiceModels: the configured servers where given, the offline fallbacks where not. */
describe('buildVoiceModels', () => {
  it('speaks to the configured servers with their keys and models', async () => {
    const [chatServer, sttServer, ttsServer] = await Promise.all([
      startChatServer({ replies: ['Hi there.'] }),
      startSttServer({ text: 'hello' }),
      startTtsServer(),
    ]);
    const models = buildVoiceModels({
      llm: { url: chatServer.url, apiKey: 'sk-llm', model: 'gpt-test' },
      stt: { url: sttServer.url, apiKey: 'sk-stt', model: 'whisper-test' },
      tts: { url: ttsServer.url, apiKey: 'sk-tts', model: 'tts-test' },
    });
    try {
      expect([models.chat?.model, models.stt.name, models.tts.name]).toEqual([
        'gpt-test',
        'openai:whisper-test',
        'openai:tts-test',
      ]);
      const words: string[] = [];
      for await (const delta of models.chat?.stream({ messages: [{ role: 'user', content: 'Hi' }] }) ?? []) {
        if (delta.type === 'text') words.push(delta.text);
      }
      expect(words.join('')).toBe('Hi there.');
      expect(await models.stt.transcribe(await synthesize('hello'), { language: 'hi-IN' })).toBe('hello');
      let samples = 0;
      for await (const pcm of models.tts.synthesize('Hello.', { voiceId: 'nova' })) samples += pcm.length;
      expect(samples).toBeGreaterThan(1000);
      expect(chatServer.requests[0]?.headers.authorization).toBe('Bearer sk-llm');
      expect(sttServer.requests[0]).toMatchObject({ model: 'whisper-test', language: 'hi' });
      expect(sttServer.requests[0]?.headers.authorization).toBe('Bearer sk-stt');
      expect(ttsServer.requests[0]).toMatchObject({ model: 'tts-test', voice: 'nova' });
      expect(ttsServer.requests[0]?.headers.authorization).toBe('Bearer sk-tts');
    } finally {
      await models.close();
      await Promise.all([chatServer.close(), sttServer.close(), ttsServer.close()]);
    }
  });

  it('gives every server OUTDIAL_MODEL_TIMEOUT_MS to start answering, and no longer', async () => {
    const config = loadConfig({ OUTDIAL_MODEL_TIMEOUT_MS: '1000' });
    expect(config.modelTimeoutMs).toBe(1000);
    expect(loadConfig({}).modelTimeoutMs).toBe(10_000);
    expect(() => loadConfig({ OUTDIAL_MODEL_TIMEOUT_MS: '50' })).toThrow(/OUTDIAL_MODEL_TIMEOUT_MS/);
    const build = async (delayMs: number) => {
      const servers = await Promise.all([
        startChatServer({ replies: ['Hi there.'], firstTokenMs: delayMs }),
        startSttServer({ text: 'hello', delayMs }),
        startTtsServer({ firstByteMs: delayMs }),
      ]);
      const [chatServer, sttServer, ttsServer] = servers;
      const models = buildVoiceModels({
        llm: { url: chatServer.url, model: 'gpt-test' },
        stt: { url: sttServer.url, model: 'whisper-test' },
        tts: { url: ttsServer.url, model: 'tts-test' },
        timeoutMs: config.modelTimeoutMs,
      });
      const outcome = async (work: () => Promise<unknown>) =>
        work().then(
          () => 'answered',
          (failure: { reason?: string }) => failure.reason ?? String(failure),
        );
      const audio = await synthesize('hello');
      const results = await Promise.all([
        outcome(async () => {
          for await (const _ of models.chat?.stream({ messages: [{ role: 'user', content: 'Hi' }] }) ?? []);
        }),
        outcome(() => models.stt.transcribe(audio, {})),
        outcome(async () => {
          for await (const _ of models.tts.synthesize('Hello.', {}));
        }),
      ]);
      await models.close();
      await Promise.all(servers.map((server) => server.close()));
      return results;
    };
    // Slower than the setting: each port fails as a timeout; well within it: each answers.
    expect(await build(1600)).toEqual(['timeout', 'timeout', 'timeout']);
    expect(await build(200)).toEqual(['answered', 'answered', 'answered']);
  });

  it('falls back to pocketsphinx and espeak-ng, with no chat model, when nothing is configured', async () => {
    const models = buildVoiceModels({ llm: null, stt: null, tts: null });
    expect(models.chat).toBeNull();
    expect(models.stt.name).toBe('pocketsphinx');
    expect(models.tts.name).toBe('espeak-ng');
    let samples = 0;
    for await (const pcm of models.tts.synthesize('Hello.', { language: 'en-IN' })) samples += pcm.length;
    expect(samples).toBeGreaterThan(1000);
    const detector = await models.detector({
      endSilenceMs: 500,
      maxTurnMs: 6000,
      onSpeechStart: () => {},
      onSpeechEnd: () => {},
    });
    expect(detector).toBeInstanceOf(SileroSpeechDetector);
    await detector.close();
    await models.close();
  });

  it('takes its endpoints from the configuration', () => {
    expect(modelEndpoints(loadConfig({}))).toEqual({ llm: null, stt: null, tts: null });
    expect(
      modelEndpoints(
        loadConfig({
          OUTDIAL_LLM_URL: 'http://127.0.0.1:11434/v1',
          OUTDIAL_LLM_MODEL: 'llama3.1',
          OUTDIAL_STT_URL: 'https://api.groq.com/openai/v1',
          OUTDIAL_STT_API_KEY: 'gsk-1',
          OUTDIAL_TTS_URL: 'http://127.0.0.1:8880/v1',
        }),
      ),
    ).toEqual({
      llm: { url: 'http://127.0.0.1:11434/v1', apiKey: null, model: 'llama3.1' },
      stt: { url: 'https://api.groq.com/openai/v1', apiKey: 'gsk-1', model: 'whisper-1' },
      tts: { url: 'http://127.0.0.1:8880/v1', apiKey: null, model: 'tts-1' },
    });
  });
});
