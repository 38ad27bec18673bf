import { afterEach, describe, expect, it } from 'vitest';
import { espeakVoice, sttLanguage } from '../../src/adapters/models/languages.js';
import { OpenAiSpeechToText, PocketsphinxSpeechToText } from '../../src/adapters/models/stt.js';
import {
  EspeakTextToSpeech,
  OpenAiTextToSpeech,
  SpeechDecoder,
  wordsPerMinute,
} from '../../src/adapters/models/tts.js';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { PHONE_RATE } from '../../src/voice/audio/pcm.js';
import { resample } from '../../src/voice/audio/resample.js';
import { encodeWav } from '../../src/voice/audio/wav.js';
import { join, silence } from '../helpers/audio.js';
import {
  downUrl,
  type SttServer,
  startSttServer,
  startTtsServer,
  TTS_RATE,
  type TtsServer,
} from '../helpers/model-servers.js';

/** The speech clients against the local /v1/audio servers, and the offline fallbacks. */
let servers: Array<SttServer | TtsServer> = [];
const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all([...servers, ...closers].map((item) => item.close()));
  servers = [];
  closers.length = 0;
});

async function collect(stream: AsyncIterable<Int16Array>): Promise<{ pieces: number; pcm: Int16Array }> {
  const pieces: Int16Array[] = [];
  for await (const piece of stream) pieces.push(piece);
  return { pieces: pieces.length, pcm: join(...pieces) };
}

const rms = (pcm: Int16Array) => Math.sqrt(pcm.reduce((sum, v) => sum + v * v, 0) / Math.max(1, pcm.length));

describe('languages', () => {
  it('sends ISO 639-1 codes to speech-to-text for BCP 47 tags, codes and names', () => {
    expect(sttLanguage('hi-IN')).toBe('hi');
    expect(sttLanguage('ar-SA')).toBe('ar');
    expect(sttLanguage('en')).toBe('en');
    expect(sttLanguage('en-IN')).toBe('en');
    expect(sttLanguage('Odia')).toBe('or');
    expect(sttLanguage('English India')).toBe('en');
    expect(sttLanguage('fr_CA')).toBe('fr');
    expect(sttLanguage(null)).toBeUndefined();
    expect(sttLanguage('Klingon')).toBeUndefined();
  });

  it('picks an espeak-ng voice that exists for each Dial6 language and Saudi Arabic', async () => {
    const dial6 = {
      'hi-IN': 'hi',
      'ta-IN': 'ta',
      'te-IN': 'te',
      'bn-IN': 'bn',
      'kn-IN': 'kn',
      'ml-IN': 'ml',
      'mr-IN': 'mr',
      'gu-IN': 'gu',
      'pa-IN': 'pa',
      'or-IN': 'or',
      'en-IN': 'en-gb',
      'ar-SA': 'ar',
      Hindi: 'hi',
      'English India': 'en-gb',
      en: 'en-us',
    };
    const tts = new EspeakTextToSpeech();
    for (const [language, voice] of Object.entries(dial6)) {
      expect(espeakVoice(language)).toBe(voice);
      // The same through the fallback, which checks the voice against espeak-ng's own list.
      expect(await tts.voiceFor({ language })).toBe(voice);
    }
    expect(espeakVoice('fr-FR', new Set(['fr']))).toBe('fr');
    expect(espeakVoice('xx-YY', new Set(['fr']))).toBe('en-us');
    expect(await tts.voiceFor({ voiceId: 'alloy', language: 'ta-IN' })).toBe('ta');
    expect(await tts.voiceFor({ voiceId: 'en-gb-x-rp', language: 'en' })).toBe('en-gb-x-rp');
  });
});

describe('OpenAiSpeechToText', () => {
  it('uploads the turn as 8 kHz wav with model and language, and returns the words', {
    timeout: 120_000,
  }, async () => {
    const server = await startSttServer({ delayMs: 50 });
    servers.push(server);
    // pocketsphinx behind the server takes 1 to 2 s here, and much longer while other tests run.
    const stt = new OpenAiSpeechToText({
      url: server.url,
      model: 'whisper-1',
      apiKey: 'sk-stt',
      timeoutMs: 120_000,
    });
    closers.push(stt);
    const speech = join(
      silence(300),
      await synthesize('yes I am interested please call me tomorrow'),
      silence(600),
    );
    const text = await stt.transcribe(speech, { language: 'en-IN' });
    expect(text).toMatch(/\btomorrow\b/);
    expect(server.requests[0]).toMatchObject({
      model: 'whisper-1',
      language: 'en',
      responseFormat: 'json',
      sampleRate: PHONE_RATE,
      samples: speech.length,
      path: '/v1/audio/transcriptions',
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-stt');

    server.set({ text: 'नमस्ते' });
    expect(await stt.transcribe(speech, { language: 'hi-IN' })).toBe('नमस्ते');
    expect(server.requests[1]?.language).toBe('hi');
    await stt.transcribe(speech);
    expect(server.requests[2]?.language).toBeUndefined();
  });

  it('fails with ModelError on a 500, a timeout, a server down, a non-JSON answer and a wrong path (404)', async () => {
    const server = await startSttServer({ fail: 500 });
    servers.push(server);
    const audio = join(silence(100), await synthesize('hello'));
    const stt = new OpenAiSpeechToText({ url: server.url, model: 'm' });
    const impatient = new OpenAiSpeechToText({ url: server.url, model: 'm', timeoutMs: 300 });
    closers.push(stt, impatient);
    await expect(stt.transcribe(audio)).rejects.toMatchObject({
      name: 'ModelError',
      reason: 'status',
      status: 500,
    });

    server.set({ fail: undefined, hang: true });
    await expect(impatient.transcribe(audio)).rejects.toMatchObject({ reason: 'timeout' });
    await expect.poll(() => server.aborted).toBe(1);

    const down = new OpenAiSpeechToText({ url: await downUrl(), model: 'm' });
    closers.push(down);
    await expect(down.transcribe(audio)).rejects.toMatchObject({ name: 'ModelError', reason: 'network' });

    server.set({ hang: false, raw: '<html>proxy error</html>' });
    await expect(stt.transcribe(audio)).rejects.toMatchObject({ reason: 'malformed' });

    const tts = await startTtsServer();
    servers.push(tts);
    // A URL naming another endpoint: the server's 404, with its message.
    const wrong = new OpenAiSpeechToText({ url: `${tts.url}/audio/speech`, model: 'm' });
    closers.push(wrong);
    await expect(wrong.transcribe(audio)).rejects.toMatchObject({ reason: 'status', status: 404 });
  });

  it('cancels the upload when the signal aborts', async () => {
    const server = await startSttServer({ hang: true });
    servers.push(server);
    const stt = new OpenAiSpeechToText({ url: server.url, model: 'm' });
    closers.push(stt);
    const controller = new AbortController();
    const pending = stt.transcribe(await synthesize('hello'), { signal: controller.signal });
    await expect.poll(() => server.requests.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => server.aborted).toBe(1);
  });
});

describe('PocketsphinxSpeechToText', () => {
  it('transcribes offline', { timeout: 120_000 }, async () => {
    const speech = join(
      silence(300),
      await synthesize('yes I am interested please call me tomorrow'),
      silence(600),
    );
    expect(
      await new PocketsphinxSpeechToText({ timeoutMs: 100_000 }).transcribe(speech, { language: 'en' }),
    ).toMatch(/\btomorrow\b/);
  });
});

describe('OpenAiTextToSpeech', () => {
  it('asks for pcm with model, voice and speed, and streams it at 8 kHz as the chunks arrive', async () => {
    const server = await startTtsServer({ chunkBytes: 4801, chunkDelayMs: 2 });
    servers.push(server);
    const tts = new OpenAiTextToSpeech({ url: server.url, model: 'tts-1', apiKey: 'sk-tts' });
    closers.push(tts);
    const text = 'Hello Jordan, this is Ava.';
    const { pieces, pcm } = await collect(
      tts.synthesize(text, { voiceId: 'nova', speed: 1.25, language: 'en' }),
    );
    expect(server.requests[0]).toMatchObject({
      model: 'tts-1',
      input: text,
      voice: 'nova',
      speed: 1.25,
      responseFormat: 'pcm',
      path: '/v1/audio/speech',
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-tts');
    expect(pieces).toBeGreaterThan(3);
    // The server spoke espeak-ng at 200 wpm, sent at 24 kHz; back at 8 kHz it is the same audio.
    const reference = await synthesize(text, { wordsPerMinute: 200 });
    expect(Math.abs(pcm.length - reference.length)).toBeLessThanOrEqual(1);
    expect(rms(pcm) / rms(reference)).toBeCloseTo(1, 1);
  });

  it('sends the default voice when the agent has none, and no speed when unset; reads a wav answer', async () => {
    const server = await startTtsServer({ chunkBytes: 31 });
    servers.push(server);
    const tts = new OpenAiTextToSpeech({ url: server.url, model: 'kokoro' });
    closers.push(tts);
    const plain = await collect(tts.synthesize('Thank you.'));
    expect(server.requests[0]?.voice).toBe('alloy');
    expect(server.requests[0]?.body).not.toHaveProperty('speed');

    // A wav answer (some servers send wav whatever was asked): the header is read, not played.
    const reference = resample(
      resample(await synthesize('Thank you.'), PHONE_RATE, TTS_RATE),
      TTS_RATE,
      PHONE_RATE,
    );
    const decoder = new SpeechDecoder(24_000);
    const wav = encodeWav(resample(await synthesize('Thank you.'), PHONE_RATE, TTS_RATE), TTS_RATE);
    const pieces: Int16Array[] = [];
    for (let at = 0; at < wav.length; at += 7) pieces.push(decoder.push(wav.subarray(at, at + 7)));
    pieces.push(decoder.flush());
    expect(join(...pieces)).toEqual(reference);
    expect(plain.pcm).toEqual(reference);
  });

  it('asks for wav when the server refuses pcm, and from then on (Groq: wav at 48 kHz)', async () => {
    const server = await startTtsServer({ formats: ['wav'], rate: 48_000 });
    servers.push(server);
    const tts = new OpenAiTextToSpeech({ url: server.url, model: 'playai-tts' });
    closers.push(tts);
    const first = await collect(tts.synthesize('Thank you.', { voiceId: 'Fritz-PlayAI' }));
    const second = await collect(tts.synthesize('Thank you.', { voiceId: 'Fritz-PlayAI' }));
    expect(server.requests.map((request) => request.responseFormat)).toEqual(['pcm', 'wav', 'wav']);
    const reference = await synthesize('Thank you.');
    expect(Math.abs(first.pcm.length - reference.length)).toBeLessThanOrEqual(1);
    expect(second.pcm).toEqual(first.pcm);
  });

  it('does not count the time the consumer holds audio (waiting for the line) against the server', async () => {
    const server = await startTtsServer({ chunkBytes: 9600 });
    servers.push(server);
    const tts = new OpenAiTextToSpeech({ url: server.url, model: 'tts-1', idleTimeoutMs: 200 });
    closers.push(tts);
    let pieces = 0;
    for await (const _pcm of tts.synthesize('Hello there, this is a test of patience.')) {
      pieces++;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(pieces).toBeGreaterThan(2);
  });

  it('fails with ModelError on a 500, a server down, a hang, an mp3 answer; cancels on abort', async () => {
    const server = await startTtsServer({ fail: 500 });
    servers.push(server);
    const tts = new OpenAiTextToSpeech({ url: server.url, model: 'tts-1', firstByteTimeoutMs: 300 });
    closers.push(tts);
    await expect(collect(tts.synthesize('Hello.'))).rejects.toMatchObject({
      name: 'ModelError',
      port: 'tts',
      reason: 'status',
      status: 500,
    });
    server.set({ fail: undefined, hang: true });
    await expect(collect(tts.synthesize('Hello.'))).rejects.toMatchObject({ reason: 'timeout' });

    server.set({ hang: false, chunkBytes: 1000, chunkDelayMs: 50 });
    const patient = new OpenAiTextToSpeech({ url: server.url, model: 'tts-1' });
    closers.push(patient);
    const controller = new AbortController();
    const stopped = (async () => {
      let pieces = 0;
      for await (const _piece of patient.synthesize('A longer sentence, so that it takes a while to send.', {
        signal: controller.signal,
      })) {
        if (++pieces === 2) controller.abort();
      }
    })();
    await expect(stopped).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => server.aborted).toBe(2);

    const down = new OpenAiTextToSpeech({ url: await downUrl(), model: 'm' });
    closers.push(down);
    await expect(collect(down.synthesize('Hello.'))).rejects.toMatchObject({ reason: 'network' });

    server.set({ chunkDelayMs: 0, contentType: 'audio/mpeg' });
    await expect(collect(patient.synthesize('Hello.'))).rejects.toMatchObject({ reason: 'malformed' });
  });
});

describe('EspeakTextToSpeech', () => {
  it('speaks in the language’s voice at the agent’s speed', async () => {
    const tts = new EspeakTextToSpeech();
    const slow = await collect(tts.synthesize('Good morning, how are you today?', { speed: 0.75 }));
    const fast = await collect(tts.synthesize('Good morning, how are you today?', { speed: 1.5 }));
    expect(fast.pcm.length).toBeLessThan(slow.pcm.length * 0.7);
    const hindi = await collect(tts.synthesize('नमस्ते, आप कैसे हैं?', { language: 'hi-IN' }));
    expect(hindi.pcm.length / PHONE_RATE).toBeGreaterThan(0.5);
    expect(hindi.pcm).toEqual(await synthesize('नमस्ते, आप कैसे हैं?', { voice: 'hi' }));
    expect(wordsPerMinute(1)).toBe(160);
    expect(wordsPerMinute(4)).toBe(450);
    expect(wordsPerMinute(0.25)).toBe(80);
    expect(wordsPerMinute(null)).toBe(160);
  });
});
