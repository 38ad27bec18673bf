import { describe, expect, it } from 'vitest';
import { listeningLine, plainStartLines, type StartReport, startBanner } from '../../src/cli/banner.js';
import { loadConfig } from '../../src/config.js';

const demo = {
  agentId: 'agt_1',
  apiKey: 'key-abc',
  keyFile: '/data/demo-api-key',
  created: { userId: 'usr_1', minutes: 100, keptFile: null },
};

function report(env: Record<string, string>, extra: Partial<StartReport> = {}): StartReport {
  return {
    role: 'serve',
    version: '1.2.3',
    config: loadConfig({ OUTDIAL_DATA_DIR: '/data', ...env }, false),
    database: env.DATABASE_URL ? 'postgres' : 'pglite',
    cache: env.REDIS_URL ? 'redis' : 'memory',
    adminToken: null,
    demo: null,
    ...extra,
  };
}

describe('what a start prints', () => {
  it('in a terminal: the address, database, cache, telephony, models, the demo key and a call to paste', () => {
    const lines = startBanner(report({ PORT: '4000' }, { adminToken: 'odadm_x', demo }));
    expect(lines).toContain('  outdial 1.2.3: API and workers listening on http://localhost:4000');
    expect(lines).toContain('  database   embedded PGlite in /data/pgdata');
    expect(lines).toContain('  cache      in memory');
    expect(lines.some((line) => /^ {2}telephony {2}simulator/.test(line))).toBe(true);
    expect(lines).toContain('  chat       none: scripted conversations (OUTDIAL_LLM_URL sets a model)');
    expect(lines).toContain('  listen     pocketsphinx, offline');
    expect(lines).toContain('  speak      espeak-ng, offline');
    expect(lines).toContain('    odadm_x');
    expect(lines).toContain('  API key: key-abc');
    expect(lines).toContain('    curl -s -X POST http://localhost:4000/api/v1/call/dial \\');
  });

  it('names servers by host and model, never by password or query', () => {
    const lines = startBanner(
      report({
        DATABASE_URL: 'postgres://outdial:s3cret@db.internal:5433/calls?sslmode=require',
        REDIS_URL: 'redis://:hunter2@cache:6380/2',
        OUTDIAL_LLM_URL: 'http://user:pw@127.0.0.1:11434/v1/',
        OUTDIAL_LLM_MODEL: 'llama3',
        OUTDIAL_LLM_API_KEY: 'sk-private',
        OUTDIAL_TTS_URL: 'https://tts.example.com/v1?key=private',
      }),
    );
    const text = lines.join('\n');
    expect(lines).toContain('  database   PostgreSQL outdial@db.internal:5433/calls');
    expect(lines).toContain('  cache      Redis cache:6380/2');
    expect(lines).toContain('  chat       llama3 at http://127.0.0.1:11434/v1');
    expect(lines).toContain('  speak      tts-1 at https://tts.example.com/v1');
    for (const secret of ['s3cret', 'hunter2', 'pw@', 'sk-private', 'private', 'sslmode']) {
      expect(text).not.toContain(secret);
    }
    // A later start whose demo key no longer opens the database: no demo, no curl.
    expect(text).not.toContain('curl');
  });

  it('without a terminal: the lines scripts read, unchanged', () => {
    const first = report({}, { adminToken: 'odadm_x', demo });
    expect(listeningLine(first)).toBe(
      'outdial API and workers listening on http://localhost:3000 (database: pglite, cache: memory, telephony: simulator)',
    );
    const text = plainStartLines(first).join('\n');
    expect(text).toMatch(/Admin token[^\n]*\n\s+odadm_x/);
    expect(text).toMatch(/ {2}agent: {3}agt_1\n {2}API key: key-abc\n/);
    expect(text).toContain('-d \'{"to":"+14155550123","agentConfigId":"agt_1"');
    expect(plainStartLines(report({}))).toEqual(['']);
  });
});
