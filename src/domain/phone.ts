import {
  type CountryCode,
  getCountryCallingCode,
  isSupportedCountry,
  parsePhoneNumberFromString,
} from 'libphonenumber-js';
import { Metadata } from 'libphonenumber-js/core';
import metadata from 'libphonenumber-js/min/metadata';

export type { CountryCode } from 'libphonenumber-js';

/** A number read: its E.164 form, or the sentence that says why it cannot be dialed. */
export type PhoneReading = { ok: true; number: string } | { ok: false; reason: string };

/** What a reader may write between digits: spaces, dashes, dots, parentheses, slashes. */
const FORMATTING = /[\s\-.()/\u00a0]/g;
/** E.164 as the spec asks for it: +, a digit 1-9, then 8 to 14 digits (10 to 16 characters in all). */
const E164 = /^\+[1-9]\d{8,14}$/;

/**
 * What an international number's country code says of its length, read once per code from
 * libphonenumber's own metadata: the regular expression of the national prefix it strips (of the
 * code's main country), and the possible national lengths of every territory sharing the code.
 */
interface CallingCodePlan {
  prefix: RegExp | null;
  lengths: number[][];
}

/** The numbering-plan methods libphonenumber has but does not type (`Metadata.numberingPlan`). */
type PlanWithPrefix = { possibleLengths(): number[]; nationalPrefixForParsing(): string | undefined };

const callingCodePlans = buildCallingCodePlans();

function buildCallingCodePlans(): Map<string, CallingCodePlan> {
  const reader = new Metadata(metadata);
  const plans = new Map<string, CallingCodePlan>();
  const mainCountries = (metadata as unknown as { country_calling_codes: Record<string, CountryCode[]> })
    .country_calling_codes;
  for (const [code, countries] of Object.entries(mainCountries)) {
    const lengths = countries.map((country) => {
      reader.selectNumberingPlan(country);
      return (reader.numberingPlan as unknown as PlanWithPrefix).possibleLengths();
    });
    const main = countries[0];
    if (!main) continue;
    reader.selectNumberingPlan(main);
    const prefix = (reader.numberingPlan as unknown as PlanWithPrefix).nationalPrefixForParsing();
    plans.set(code, { prefix: prefix ? new RegExp(`^(?:${prefix})`) : null, lengths });
  }
  return plans;
}

/**
 * Whether `+digits` is possible, decided from the length alone when that is certain: no national
 * prefix to strip, and a length every territory of its code takes (or none does). Undefined when
 * only a full parse can tell. A full parse first looks for which territory the number is in (about
 * 25 µs a number, 3 s for a 100,000-contact batch); test/unit/phone.test.ts holds the two equal.
 */
function possibleByLength(international: string): boolean | undefined {
  for (let size = 1; size <= 3; size++) {
    const plan = callingCodePlans.get(international.slice(1, 1 + size));
    if (!plan) continue;
    const national = international.slice(1 + size);
    if (plan.prefix?.exec(national)?.[0]) return undefined;
    const taken = plan.lengths.map((lengths) => lengths.includes(national.length));
    if (taken.every(Boolean)) return true;
    if (!taken.some(Boolean)) return false;
    return undefined;
  }
  return undefined;
}

/**
 * A North American number written nationally (10 digits, or 11 with the trunk prefix 1) in a
 * country of +1: every territory of +1 takes 10 national digits, so it is +1 and the 10 digits.
 */
const NANP_NATIONAL = /^1?([2-9]\d{9})$/;

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
  // A refusal is rare and takes the full parse, which has the last word.
  if (E164.test(compact) && possibleByLength(compact) === true) return { ok: true, number: compact };
  if (!/^\+\d+$/.test(compact)) return refuse(`${shown} is not a phone number`);
  const parsed = parsePhoneNumberFromString(compact);
  if (!parsed?.isPossible() || !E164.test(parsed.number)) {
    return refuse(`${shown} is not a possible phone number`);
  }
  return { ok: true, number: parsed.number };
}

function readNational(shown: string, compact: string, country: CountryCode): PhoneReading {
  const nanp = getCountryCallingCode(country) === '1' ? NANP_NATIONAL.exec(compact) : null;
  if (nanp) return { ok: true, number: `+1${nanp[1]}` };
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
