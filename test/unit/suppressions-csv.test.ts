import { describe, expect, it } from 'vitest';
import { suppressionsFromCsv } from '../../src/cli/suppressions.js';

describe('suppressionsFromCsv', () => {
  it('reads the phone column and an optional reason, normalising numbers, and reports unusable lines', () => {
    const text = [
      'Phone,Reason,notes',
      '(415) 555-0101,"asked, politely",x',
      '+442071838750,,',
      'nope,,',
      '"+1 415 555 0102",,',
    ].join('\r\n');
    expect(suppressionsFromCsv(text, 'US')).toEqual({
      entries: [
        { line: 2, phoneNumber: '+14155550101', reason: 'asked, politely' },
        { line: 3, phoneNumber: '+442071838750' },
        { line: 5, phoneNumber: '+14155550102' },
      ],
      problems: [{ line: 4, message: 'nope is not a phone number' }],
    });
  });

  it('needs a header with a phone column', () => {
    expect(suppressionsFromCsv('name,reason\nAnn,x\n', 'US').problems[0]?.message).toMatch(
      /no phone number column/,
    );
    expect(suppressionsFromCsv('', 'US').problems).toEqual([{ line: 1, message: 'the file is empty' }]);
  });

  it('refuses a reason the API would refuse', () => {
    const { entries, problems } = suppressionsFromCsv(
      `phoneNumber,reason\n+14155550101,${'x'.repeat(501)}\n`,
      'US',
    );
    expect(entries).toEqual([]);
    expect(problems[0]?.line).toBe(2);
  });
});
