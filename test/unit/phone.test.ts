import { getCountries, getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js';
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

describe('normalizePhone agrees with libphonenumber on North American numbers (its shortcut)', () => {
  const random = (digits: number) => String(Math.floor(Math.random() * 10 ** digits)).padStart(digits, '0');

  it('reads 5,000 random +1 numbers, and the same written nationally in US and CA, as libphonenumber does', () => {
    for (let i = 0; i < 5000; i++) {
      const national = `${2 + Math.floor(Math.random() * 8)}${random(9)}`;
      const e164 = `+1${national}`;
      const parsed = parsePhoneNumberFromString(e164);
      const expected = parsed?.isPossible() ? parsed.number : null;
      expect(expected, e164).toBe(e164);
      for (const [raw, country] of [
        [e164, null],
        [national, 'US'],
        [`1${national}`, 'US'],
        [national, 'CA'],
      ] as const) {
        const reading = normalizePhone(raw, country);
        expect(reading.ok ? reading.number : null, `${raw} in ${country}`).toBe(expected);
        const library = parsePhoneNumberFromString(raw, country ?? undefined);
        expect(library?.isPossible() ? library.number : null, `${raw} in ${country}`).toBe(expected);
      }
    }
  });

  it('reads 20,000 random international numbers of every country code as libphonenumber does', () => {
    const codes = [...new Set(getCountries().map((country) => getCountryCallingCode(country)))];
    for (let i = 0; i < 20_000; i++) {
      const code = codes[Math.floor(Math.random() * codes.length)];
      const raw = `+${code}${1 + Math.floor(Math.random() * 9)}${random(3 + Math.floor(Math.random() * 10))}`;
      const parsed = parsePhoneNumberFromString(raw);
      const expected = parsed?.isPossible() && /^\+[1-9]\d{8,14}$/.test(parsed.number) ? parsed.number : null;
      const reading = normalizePhone(raw, null);
      expect(reading.ok ? reading.number : null, raw).toBe(expected);
    }
  });
});
