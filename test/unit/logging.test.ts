import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, formatLogLine, TurnWriter } from '../../src/logging.js';

/** 14:05:09 local time on a fixed day: the lines show the local clock. */
const AT = new Date(2030, 0, 2, 14, 5, 9, 250).getTime();

describe('the pretty log format', () => {
  it('writes a record as the time, the level unless info, the message and its fields', () => {
    expect(
      formatLogLine({ level: 30, time: AT, pid: 7, hostname: 'h', service: 'outdial', msg: 'voice models' }),
    ).toBe('14:05:09 voice models');
    expect(
      formatLogLine({
        level: 40,
        time: AT,
        service: 'outdial',
        msg: 'could not show a call start',
        callId: 'call_01',
        attempt: 2,
        chat: null,
        reqId: 'req-9',
      }),
    ).toBe('14:05:09 WARN could not show a call start callId=call_01 attempt=2 chat=null');
  });

  it('quotes values with spaces, shows an error by its message and code, and cuts long values', () => {
    const line = formatLogLine({
      level: 50,
      time: AT,
      msg: 'unhandled error',
      err: { type: 'Error', message: 'connect refused', code: 'ECONNREFUSED', stack: 'Error: x\n    at y' },
      note: 'two words',
      empty: '',
      nested: { a: 1, list: ['x'] },
      long: 'z'.repeat(500),
    });
    expect(line).toMatch(
      /^14:05:09 ERROR unhandled error err="connect refused \(ECONNREFUSED\)" note="two words" empty="" nested=\{"a":1,"list":\["x"\]\} long=z{119}…$/,
    );
    expect(line).not.toContain('\n');
    expect(
      formatLogLine({
        level: 60,
        time: AT,
        msg: 'boom',
        err: { message: 'EADDRINUSE: in use', code: 'EADDRINUSE' },
      }),
    ).toBe('14:05:09 FATAL boom err="EADDRINUSE: in use"');
  });

  it('is what a pretty logger writes, one line a record, and keeps the level it was given', () => {
    const written: string[] = [];
    const logger = createLogger(
      { logLevel: 'warn', logFormat: 'pretty' },
      { write: (text) => written.push(text) },
    );
    logger.info('not shown');
    logger.warn({ port: 3000 }, 'slow start');
    logger.error(new Error('it broke'), 'failed');
    expect(written).toHaveLength(2);
    expect(written[0]).toMatch(/^\d\d:\d\d:\d\d WARN slow start port=3000\n$/);
    expect(written[1]).toMatch(/^\d\d:\d\d:\d\d ERROR failed err="it broke"\n$/);
  });
});

describe('the JSON log writer', () => {
  it('writes the records of one event-loop turn together and in order, or at once when flushed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-log-'));
    const file = path.join(dir, 'out.log');
    const fd = fs.openSync(file, 'w');
    try {
      const writer = new TurnWriter(fd);
      writer.write('{"msg":"one"}\n');
      writer.write('{"msg":"two"}\n');
      expect(fs.readFileSync(file, 'utf8')).toBe('');
      await new Promise((resolve) => setImmediate(resolve));
      expect(fs.readFileSync(file, 'utf8')).toBe('{"msg":"one"}\n{"msg":"two"}\n');
      writer.write('{"msg":"three"}\n');
      writer.flush();
      expect(fs.readFileSync(file, 'utf8')).toBe('{"msg":"one"}\n{"msg":"two"}\n{"msg":"three"}\n');
    } finally {
      fs.closeSync(fd);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
