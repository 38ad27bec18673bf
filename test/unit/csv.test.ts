import { describe, expect, it } from 'vitest';
import { contactsFromCsv, parseCsv } from '../../src/cli/csv.js';

describe('CSV for campaigns', () => {
  it('reads quoted cells with commas, quotes and line breaks, CRLF or LF, with their line numbers', () => {
    const records = parseCsv('\ufeffa,b\r\n"x, y","say ""hi"""\n"two\nlines",z\n\nlast,1');
    expect(records).toEqual([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['x, y', 'say "hi"'] },
      { line: 3, cells: ['two\nlines', 'z'] },
      { line: 6, cells: ['last', '1'] },
    ]);
  });

  it('turns rows into contacts: E.164 numbers, known columns, the rest into metadata, bad rows reported', () => {
    const { contacts, problems } = contactsFromCsv(
      [
        'Phone,name,email,company,plan,notes',
        '(415) 555-0131,Ann,ann@example.com,Acme,Pro,',
        '+44 20 7946 0018,Ben,,,Basic,"called before, liked it"',
        '12345,Bad number,,,,',
        '+14155550133,Bad email,not-an-email,,,',
        '+14155550134,Too few cells',
      ].join('\n'),
      'US',
    );
    expect(contacts).toEqual([
      {
        phoneNumber: '+14155550131',
        name: 'Ann',
        email: 'ann@example.com',
        company: 'Acme',
        metadata: { plan: 'Pro' },
      },
      {
        phoneNumber: '+442079460018',
        name: 'Ben',
        metadata: { plan: 'Basic', notes: 'called before, liked it' },
      },
    ]);
    expect(problems).toEqual([
      { line: 4, message: '12345 is not a valid number for US' },
      { line: 5, message: '"not-an-email" is not an email address' },
      { line: 6, message: 'has 2 cells, the header has 6' },
    ]);
  });

  it('refuses a file without a phone column, or an empty one', () => {
    expect(contactsFromCsv('name,email\nAnn,a@b.co', 'US').problems[0]?.message).toContain(
      'no phone number column',
    );
    expect(contactsFromCsv('', 'US').problems[0]?.message).toBe('the file is empty');
  });
});
