import { type CountryCode, isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js';

export type { CountryCode } from 'libphonenumber-js';

/** A number read: its E.164 form, or the sentence that says why it cannot be dialed. */
export type PhoneReading = { ok: true; number: string } | { ok: false; reason: string };

/** What a reader may write between digits: spaces, dashes, dots, parentheses, slashes. */
const FORMATTING = /[\s\-.()/\u00a0]/g;
/** E.164 as the spec asks for it: +, a digit 1-9, then 8 to 14 digits (10 to 16 characters in all). */
const E164 = /^\+[1-9]\d{8,14}$/;

/** Whether `code` is an ISO 3166-1 alpha-2 country whose numbering plan we know. */
export function isPhoneCountry(code: string): code is CountryCode {
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code);
}

/**
 * The one phone-number rule (issue 25 §8): every entry point (API, CLI, CSV import, suppressions,
 * call filters) reads numbers here. A number written with `+` is international; one without is
 * read in `defaultCountry` (the user's setting, then OUTDIAL_DEFAULT_COUNTRY). Formatting is
 * dropped; the number must be possible in its country's plan (libphonenumber's `isPossible`, so
 * any real national plan passes) and come out as E.164 of at least 10 characters.
 */
export function normalizePhone(raw: string, defaultCountry: CountryCode | null): PhoneReading {
  const shown = raw.trim();
  if (shown === '') return refuse('an empty string is not a phone number');
  const compact = shown.replace(FORMATTING, '');
  if (compact.startsWith('+')) return readInternational(shown, compact);
  if (!/^\d+$/.test(compact)) return refuse(`${shown} is not a phone number`);
  if (!defaultCountry) {
    return refuse(`${shown} has no country code: write it with + and the country code, e.g. +14155550123`);
  }
  return readNational(shown, compact, defaultCountry);
}

function readInternational(shown: string, compact: string): PhoneReading {
  if (!/^\+\d+$/.test(compact)) return refuse(`${shown} is not a phone number`);
  const parsed = parsePhoneNumberFromString(compact);
  if (!parsed?.isPossible() || !E164.test(parsed.number)) {
    return refuse(`${shown} is not a possible phone number`);
  }
  return { ok: true, number: parsed.number };
}

function readNational(shown: string, compact: string, country: CountryCode): PhoneReading {
  const parsed = parsePhoneNumberFromString(compact, country);
  if (!parsed?.isPossible() || !E164.test(parsed.number)) {
    return refuse(`${shown} is not a valid number for ${country}`);
  }
  return { ok: true, number: parsed.number };
}

function refuse(reason: string): PhoneReading {
  return { ok: false, reason };
}

/** The number in E.164, or null: for fields that take no default country (a trunk's caller id, a transfer). */
export function strictPhone(raw: string): string | null {
  const reading = normalizePhone(raw, null);
  return reading.ok ? reading.number : null;
}

/** How the API describes a phone number field (OpenAPI). */
export const PHONE_NUMBER_DESCRIPTION =
  "A phone number: E.164 (+14155550123), or a national number read in your default country (your account's defaultCountry, else the server's OUTDIAL_DEFAULT_COUNTRY). Spaces, dashes, dots and parentheses are ignored; the number is stored in E.164.";
