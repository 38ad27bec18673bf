import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { STORE, startTestApp } from '../helpers/app.js';

/** Starting the workers on a fresh database logs nothing at warn or above (an error here once hid a broken recovery). */
describe(`a clean start (${STORE})`, () => {
  it('logs no warning or error while the workers start and run', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const t = await startTestApp({ overrides: { logger } });
    try {
      t.runtime.startWorkers();
      await new Promise((resolve) => setTimeout(resolve, 1500));
    } finally {
      await t.close();
    }
    expect(lines.map((line) => line.msg)).toEqual([]);
  });
});
