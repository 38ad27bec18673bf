import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('reads OUTDIAL_DEFAULT_COUNTRY in any case, as an upper-case ISO 3166-1 alpha-2 code', () => {
    expect(loadConfig({ OUTDIAL_DEFAULT_COUNTRY: 'gb' }).defaultCountry).toBe('GB');
    expect(() => loadConfig({ OUTDIAL_DEFAULT_COUNTRY: 'Germany' })).toThrow(
      'OUTDIAL_DEFAULT_COUNTRY must be an ISO 3166-1 alpha-2 country code with a known numbering plan, such as US, GB or DE, got "Germany"',
    );
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      databaseUrl: undefined,
      redisUrl: undefined,
      dataDir: path.resolve('.outdial'),
      publicUrl: 'http://localhost:3000',
      voiceProvider: 'simulator',
      simRingMs: 2000,
      simTalkMs: 30000,
      webhookAllowPrivate: false,
      webhookRetryDelaysMs: [1000, 5000, 25000],
      estimatedMinutesPerCall: 1,
      sipBindAddress: '0.0.0.0',
      defaultCountry: 'US',
      sipPublicAddress: undefined,
      sipPort: 5060,
      rtpPorts: [40000, 40999],
      sipRingTimeoutMs: 30000,
      maxCallSeconds: 600,
      amd: true,
      conversationEngine: 'auto',
      recordingRetentionDays: null,
      maxAiCalls: 8,
      maxEventLoopLagMs: 150,
      breakers: { threshold: 3, windowMs: 60_000, probeMs: 2_000, probeMaxMs: 15_000 },
    });
  });

  it('logs JSON unless stdout is a terminal, and LOG_FORMAT says otherwise either way', () => {
    expect(loadConfig({}, false)).toMatchObject({ logFormat: 'json', logLevel: 'info' });
    expect(loadConfig({}, true)).toMatchObject({ logFormat: 'pretty', logLevel: 'info' });
    expect(loadConfig({ LOG_FORMAT: 'json' }, true).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty', LOG_LEVEL: 'warn' }, false)).toMatchObject({
      logFormat: 'pretty',
      logLevel: 'warn',
    });
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u@db:5432/outdial',
      REDIS_URL: 'redis://cache:6379/2',
      OUTDIAL_DATA_DIR: '/var/lib/outdial',
      OUTDIAL_PUBLIC_URL: 'https://calls.example.com/',
      OUTDIAL_ADMIN_TOKEN: 'a-long-admin-token-123',
      OUTDIAL_JWT_SECRET: 'x'.repeat(32),
      OUTDIAL_SIM_RING_MS: '10',
      OUTDIAL_SIM_TALK_MS: '20',
      OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: '10, 20',
      OUTDIAL_ESTIMATED_MINUTES_PER_CALL: '2.5',
      OUTDIAL_MAX_CONCURRENT_CALLS: '50',
      OUTDIAL_MAX_AI_CALLS: '3',
      OUTDIAL_MAX_EVENT_LOOP_LAG_MS: '250',
      OUTDIAL_LLM_URL: 'http://127.0.0.1:11434/v1',
      OUTDIAL_LLM_MODEL: 'llama3',
      OUTDIAL_SIP_BIND: '10.0.0.5',
      OUTDIAL_SIP_PUBLIC_ADDRESS: '203.0.113.7',
      OUTDIAL_SIP_PORT: '5080',
      OUTDIAL_RTP_PORTS: '20000-20099',
      OUTDIAL_SIP_RING_TIMEOUT_MS: '25000',
      OUTDIAL_MAX_CALL_SECONDS: '300',
      OUTDIAL_AMD: 'false',
      OUTDIAL_CONVERSATION_ENGINE: './engine.mjs',
      OUTDIAL_RECORDING_RETENTION_DAYS: '90',
      OUTDIAL_BREAKER_THRESHOLD: '5',
      OUTDIAL_BREAKER_WINDOW_MS: '30000',
      OUTDIAL_BREAKER_PROBE_MS: '500',
      OUTDIAL_BREAKER_PROBE_MAX_MS: '10000',
    });
    expect(config).toMatchObject({
      sipBindAddress: '10.0.0.5',
      sipPublicAddress: '203.0.113.7',
      sipPort: 5080,
      rtpPorts: [20000, 20099],
      sipRingTimeoutMs: 25000,
      maxCallSeconds: 300,
      amd: false,
      conversationEngine: './engine.mjs',
      recordingRetentionDays: 90,
      port: 8080,
      host: '127.0.0.1',
      databaseUrl: 'postgres://u@db:5432/outdial',
      redisUrl: 'redis://cache:6379/2',
      dataDir: '/var/lib/outdial',
      publicUrl: 'https://calls.example.com',
      simRingMs: 10,
      simTalkMs: 20,
      webhookAllowPrivate: true,
      webhookRetryDelaysMs: [10, 20],
      estimatedMinutesPerCall: 2.5,
      maxConcurrentCalls: 50,
      maxAiCalls: 3,
      maxEventLoopLagMs: 250,
      llmModel: 'llama3',
      breakers: { threshold: 5, windowMs: 30_000, probeMs: 500, probeMaxMs: 10_000 },
    });
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ OUTDIAL_SIM_RING_MS: '-5' }, 'OUTDIAL_SIM_RING_MS'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'not a url' }, 'REDIS_URL'],
    [{ OUTDIAL_JWT_SECRET: 'short' }, 'OUTDIAL_JWT_SECRET'],
    [{ OUTDIAL_ADMIN_TOKEN: 'short' }, 'OUTDIAL_ADMIN_TOKEN'],
    [{ OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'maybe' }, 'OUTDIAL_WEBHOOK_ALLOW_PRIVATE'],
    [{ OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: '1000,soon' }, 'OUTDIAL_WEBHOOK_RETRY_DELAYS_MS'],
    [{ OUTDIAL_VOICE_PROVIDER: 'twilio' }, 'OUTDIAL_VOICE_PROVIDER'],
    [{ OUTDIAL_RTP_PORTS: '40000' }, 'OUTDIAL_RTP_PORTS'],
    [{ OUTDIAL_RTP_PORTS: '80-90' }, 'OUTDIAL_RTP_PORTS'],
    [{ OUTDIAL_RTP_PORTS: '40000-40000' }, 'OUTDIAL_RTP_PORTS'],
    [{ OUTDIAL_SIP_PORT: '-1' }, 'OUTDIAL_SIP_PORT'],
    [{ OUTDIAL_AMD: 'sometimes' }, 'OUTDIAL_AMD'],
    [{ OUTDIAL_RECORDING_RETENTION_DAYS: '0' }, 'OUTDIAL_RECORDING_RETENTION_DAYS'],
    [{ OUTDIAL_ENCRYPTION_KEY: 'short' }, 'OUTDIAL_ENCRYPTION_KEY'],
    [{ OUTDIAL_PREVIOUS_ENCRYPTION_KEYS: `${'k'.repeat(32)},short` }, 'OUTDIAL_PREVIOUS_ENCRYPTION_KEYS'],
    [{ OUTDIAL_RECORDING_URL_TTL_HOURS: '0' }, 'OUTDIAL_RECORDING_URL_TTL_HOURS'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    [{ OUTDIAL_MAX_AI_CALLS: '0' }, 'OUTDIAL_MAX_AI_CALLS'],
    [{ OUTDIAL_MAX_AI_CALLS: 'many' }, 'OUTDIAL_MAX_AI_CALLS'],
    [{ OUTDIAL_MAX_EVENT_LOOP_LAG_MS: '5' }, 'OUTDIAL_MAX_EVENT_LOOP_LAG_MS'],
    [{ LOG_FORMAT: 'text' }, 'LOG_FORMAT'],
    [{ OUTDIAL_DEFAULT_COUNTRY: 'USA' }, 'OUTDIAL_DEFAULT_COUNTRY'],
    [{ OUTDIAL_DEFAULT_COUNTRY: 'XX' }, 'OUTDIAL_DEFAULT_COUNTRY'],
    [{ OUTDIAL_BREAKER_THRESHOLD: '0' }, 'OUTDIAL_BREAKER_THRESHOLD'],
    [{ OUTDIAL_BREAKER_THRESHOLD: 'three' }, 'OUTDIAL_BREAKER_THRESHOLD'],
    [{ OUTDIAL_BREAKER_WINDOW_MS: '10' }, 'OUTDIAL_BREAKER_WINDOW_MS'],
    [{ OUTDIAL_BREAKER_PROBE_MS: '-1' }, 'OUTDIAL_BREAKER_PROBE_MS'],
    [{ OUTDIAL_BREAKER_PROBE_MAX_MS: '99' }, 'OUTDIAL_BREAKER_PROBE_MAX_MS'],
    [
      { OUTDIAL_BREAKER_PROBE_MS: '5000', OUTDIAL_BREAKER_PROBE_MAX_MS: '1000' },
      'OUTDIAL_BREAKER_PROBE_MAX_MS',
    ],
  ])('stops on %o with a message naming the variable', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  it('reads the speech servers for AI calls, with OpenAI model names by default', () => {
    expect(loadConfig({})).toMatchObject({
      sttUrl: undefined,
      sttApiKey: undefined,
      sttModel: undefined,
      ttsUrl: undefined,
      ttsApiKey: undefined,
      ttsModel: undefined,
    });
    expect(
      loadConfig({
        OUTDIAL_STT_URL: 'https://api.openai.com/v1',
        OUTDIAL_TTS_URL: 'http://127.0.0.1:8880/v1',
      }),
    ).toMatchObject({
      sttUrl: 'https://api.openai.com/v1',
      sttModel: 'whisper-1',
      ttsUrl: 'http://127.0.0.1:8880/v1',
      ttsModel: 'tts-1',
    });
    expect(
      loadConfig({
        OUTDIAL_STT_URL: 'https://api.groq.com/openai/v1',
        OUTDIAL_STT_MODEL: 'whisper-large-v3-turbo',
        OUTDIAL_STT_API_KEY: 'gsk-1',
        OUTDIAL_TTS_URL: 'http://speaches:8000/v1',
        OUTDIAL_TTS_MODEL: 'speaches-ai/Kokoro-82M-v1.0-ONNX',
        OUTDIAL_TTS_API_KEY: 'local-key',
      }),
    ).toMatchObject({
      sttUrl: 'https://api.groq.com/openai/v1',
      sttModel: 'whisper-large-v3-turbo',
      sttApiKey: 'gsk-1',
      ttsUrl: 'http://speaches:8000/v1',
      ttsModel: 'speaches-ai/Kokoro-82M-v1.0-ONNX',
      ttsApiKey: 'local-key',
    });
  });

  it.each([
    [{ OUTDIAL_STT_URL: 'ftp://stt.example.com' }, 'OUTDIAL_STT_URL'],
    [{ OUTDIAL_TTS_URL: 'not a url' }, 'OUTDIAL_TTS_URL'],
    [{ OUTDIAL_STT_MODEL: 'whisper-1' }, 'OUTDIAL_STT_MODEL is set but OUTDIAL_STT_URL is not'],
    [{ OUTDIAL_TTS_API_KEY: 'sk-1' }, 'OUTDIAL_TTS_API_KEY is set but OUTDIAL_TTS_URL is not'],
  ])('stops on a speech server setting %o with a message naming it', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('reads the realtime engine server: the model defaults to OpenAI name, the key is kept', () => {
    expect(loadConfig({})).toMatchObject({ realtimeUrl: undefined, realtimeModel: undefined });
    expect(
      loadConfig({
        OUTDIAL_CONVERSATION_ENGINE: 'realtime',
        OUTDIAL_REALTIME_URL: 'wss://api.openai.com/v1/realtime',
        OUTDIAL_REALTIME_API_KEY: 'sk-rt',
      }),
    ).toMatchObject({
      conversationEngine: 'realtime',
      realtimeUrl: 'wss://api.openai.com/v1/realtime',
      realtimeModel: 'gpt-realtime',
      realtimeApiKey: 'sk-rt',
    });
    expect(
      loadConfig({ OUTDIAL_REALTIME_URL: 'ws://speaches:8000/v1', OUTDIAL_REALTIME_MODEL: 'local-rt' }),
    ).toMatchObject({
      realtimeUrl: 'ws://speaches:8000/v1',
      realtimeModel: 'local-rt',
      realtimeApiKey: undefined,
    });
  });

  it.each([
    [
      { OUTDIAL_CONVERSATION_ENGINE: 'realtime' },
      'OUTDIAL_CONVERSATION_ENGINE=realtime needs OUTDIAL_REALTIME_URL',
    ],
    [
      { OUTDIAL_REALTIME_URL: 'https://api.openai.com/v1/realtime' },
      'OUTDIAL_REALTIME_URL must use ws: or wss:',
    ],
    [{ OUTDIAL_REALTIME_URL: 'not a url' }, 'OUTDIAL_REALTIME_URL is not a valid URL'],
    [
      { OUTDIAL_REALTIME_MODEL: 'gpt-realtime' },
      'OUTDIAL_REALTIME_MODEL is set but OUTDIAL_REALTIME_URL is not',
    ],
    [{ OUTDIAL_REALTIME_API_KEY: 'sk-1' }, 'OUTDIAL_REALTIME_API_KEY is set but OUTDIAL_REALTIME_URL is not'],
  ])('stops on a realtime setting %o with a message naming it', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
