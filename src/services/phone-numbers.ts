import { AppError } from '../domain/errors.js';
import { type CountryCode, isPhoneCountry, normalizePhone } from '../domain/phone.js';
import type { Deps } from './deps.js';

/**
 * The country a user's numbers without `+` are read in: the user's own `defaultCountry`, else the
 * server's OUTDIAL_DEFAULT_COUNTRY (docs/decisions.md, "One phone-number rule").
 */
export async function defaultCountryOf(
  deps: Pick<Deps, 'store' | 'config'>,
  userId: string,
): Promise<CountryCode> {
  const user = await deps.store.users.get(userId);
  return effectiveCountry(user?.default_country ?? null, deps.config.defaultCountry);
}

/** The user's setting when it is a country we know, else the server's. */
export function effectiveCountry(own: string | null, server: CountryCode): CountryCode {
  return own && isPhoneCountry(own) ? own : server;
}

/**
 * `raw` in E.164, or a 400 naming `field` with the reason as a sentence: INVALID_REQUEST for a
 * body field, INVALID_PARAMETER for a query or path parameter.
 */
export function phoneOrRefuse(
  raw: string,
  country: CountryCode | null,
  field: string,
  code: 'INVALID_REQUEST' | 'INVALID_PARAMETER' = 'INVALID_REQUEST',
): string {
  const reading = normalizePhone(raw, country);
  if (reading.ok) return reading.number;
  throw new AppError(code, `${field}: ${reading.reason}`, { fieldErrors: { [field]: [reading.reason] } });
}

/**
 * A user's `defaultCountry` as the admin API sets it: an ISO 3166-1 alpha-2 code (any case) whose
 * numbering plan we know, upper-cased; null clears it. A 400 otherwise.
 */
export function userCountry(raw: string | null): string | null {
  if (raw === null) return null;
  const code = raw.trim().toUpperCase();
  if (isPhoneCountry(code)) return code;
  const reason = `${raw} is not an ISO 3166-1 alpha-2 country code with a known numbering plan (e.g. US, GB, DE)`;
  throw new AppError('INVALID_REQUEST', `defaultCountry: ${reason}`, {
    fieldErrors: { defaultCountry: [reason] },
  });
}

/**
 * Contacts whose phoneNumber this process has already read into E.164: the preflight's valid
 * contacts, which BatchService.accept's check then takes without reading 100,000 numbers again
 * (about 25 µs each). An E.164 number reads the same in every country, so the mark holds.
 */
const readContacts = new WeakSet<object>();

export function markPhoneRead<T extends object>(contact: T): T {
  readContacts.add(contact);
  return contact;
}

export function phoneWasRead(contact: object): boolean {
  return readContacts.has(contact);
}
