import { describe, expect, it } from 'vitest';
import { isPhoneCountry, normalizePhone, strictPhone } from '../../src/domain/phone.js';

describe('normalizePhone: the one phone-number rule', () => {
  it.each(['+14155550123', '+442071838750', '+919876543210', '+966501234567'])(
    'keeps E.164 %s as it is, whatever the default country',
    (n) => {
      expect(normalizePhone(n, 'US')).toEqual({ ok: true, number: n });
      expect(normalizePhone(n, 'GB')).toEqual({ ok: true, number: n });
      expect(normalizePhone(n, null)).toEqual({ ok: true, number: n });
    },
  );

  it.each([
    ['4155550123', 'US', '+14155550123'],
    ['(415) 555-0123', 'US', '+14155550123'],
    ['415.555.0123', 'US', '+14155550123'],
    ['1 415 555 0123', 'US', '+14155550123'],
    ['07700 900123', 'GB', '+447700900123'],
    ['030 123456', 'DE', '+4930123456'],
    ['+1 (415) 555-0123', 'GB', '+14155550123'],
    [' +44 20 7183 8750 ', 'US', '+442071838750'],
  ] as const)('reads %s in %s as %s', (raw, country, number) => {
    expect(normalizePhone(raw, country)).toEqual({ ok: true, number });
  });

  it.each([
    ['555-0123', 'US', '555-0123 is not a valid number for US'],
    ['0123', 'GB', '0123 is not a valid number for GB'],
    ['+1000000000', 'US', '+1000000000 is not a possible phone number'],
    ['+1415555', 'US', '+1415555 is not a possible phone number'],
    ['+04155550123', 'US', '+04155550123 is not a possible phone number'],
    ['+1415555012345678', 'US', '+1415555012345678 is not a possible phone number'],
    ['+1415555ABCD', 'US', '+1415555ABCD is not a phone number'],
    ['call me', 'US', 'call me is not a phone number'],
    ['', 'US', 'an empty string is not a phone number'],
  ] as const)('refuses %s (default %s) with a sentence', (raw, country, reason) => {
    expect(normalizePhone(raw, country)).toEqual({ ok: false, reason });
  });

  it('refuses a number without + when there is no default country, saying how to write it', () => {
    expect(normalizePhone('4155550123', null)).toEqual({
      ok: false,
      reason: '4155550123 has no country code: write it with + and the country code, e.g. +14155550123',
    });
    expect(strictPhone('4155550123')).toBeNull();
    expect(strictPhone(' +1 415 555 0123 ')).toBe('+14155550123');
  });

  it('knows the countries by their ISO 3166-1 alpha-2 code, upper case', () => {
    expect(isPhoneCountry('US')).toBe(true);
    expect(isPhoneCountry('GB')).toBe(true);
    expect(isPhoneCountry('us')).toBe(false);
    expect(isPhoneCountry('XX')).toBe(false);
    expect(isPhoneCountry('USA')).toBe(false);
  });
});
