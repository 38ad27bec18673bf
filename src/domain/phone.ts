import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * E.164 check for numbers the API receives. The spec asks for E.164 with at least 10 characters;
 * we also ask libphonenumber whether the number is possible, so "+1000000000" is refused while
 * any real national plan passes. Returns the canonical form, or null.
 */
export function normalizeE164(raw: string): string | null {
  const trimmed = raw.trim();
  if (trimmed.length < 10 || !/^\+[1-9]\d{6,14}$/.test(trimmed)) return null;
  const parsed = parsePhoneNumberFromString(trimmed);
  if (!parsed?.isPossible()) return null;
  return parsed.number;
}

export const E164_MESSAGE = 'must be an E.164 phone number such as +14155550123 (at least 10 characters)';
