import { type CountryCode, isPhoneCountry, normalizePhone } from '../domain/phone.js';
import { AdminClientError } from './admin-client.js';

export interface CsvRecord {
  /** The line the record starts on, counting the header as line 1. */
  line: number;
  cells: string[];
}

/** RFC 4180 CSV: quoted cells may hold commas, quotes ("") and line breaks; CRLF or LF line ends. */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let start = 1;
  const input = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const endRecord = () => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0]?.trim() === '')) records.push({ line: start, cells });
    cells = [];
    cell = '';
  };
  for (let i = 0; i < input.length; i++) {
    const char = input[i];
    if (quoted) {
      if (char === '"' && input[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (char === '"') {
        quoted = false;
      } else {
        if (char === '\n') line++;
        cell += char;
      }
    } else if (char === '"' && cell === '') {
      quoted = true;
    } else if (char === ',') {
      cells.push(cell);
      cell = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && input[i + 1] === '\n') i++;
      endRecord();
      line++;
      start = line;
    } else {
      cell += char;
    }
  }
  if (cell !== '' || cells.length > 0) endRecord();
  return records;
}

export interface CsvContact {
  phoneNumber: string;
  name?: string;
  email?: string;
  company?: string;
  metadata?: Record<string, string>;
}

export interface CsvProblem {
  line: number;
  message: string;
}

export const PHONE_HEADERS = ['phonenumber', 'phone', 'phone_number', 'number', 'mobile'];
const KNOWN = new Set(['name', 'email', 'company']);

/**
 * The country a CSV's numbers without + are read in: `--country` when given (refused unless an
 * ISO 3166-1 alpha-2 code we know), else the account's (GET /api/v1/account: the user's
 * defaultCountry, else the server's OUTDIAL_DEFAULT_COUNTRY), so the CLI reads numbers as the API
 * would.
 */
export async function csvCountry(
  option: string | undefined,
  account: () => Promise<Record<string, unknown>>,
): Promise<CountryCode> {
  if (option !== undefined) {
    const code = option.trim().toUpperCase();
    if (!isPhoneCountry(code)) {
      throw new AdminClientError(
        `--country must be an ISO 3166-1 alpha-2 country code such as US, GB or DE, got "${option}"`,
      );
    }
    return code;
  }
  const own = (await account()).defaultCountry;
  if (typeof own === 'string' && isPhoneCountry(own)) return own;
  throw new AdminClientError('the server did not say its default country: pass --country');
}

/**
 * Contacts from a CSV with a header row: phoneNumber (or phone), name, email, company; any other
 * column goes into metadata. Numbers are read by the one phone-number rule (domain/phone.ts), in
 * `country` when written without a country code. Rows that cannot be used are returned as problems with their line numbers.
 */
export function contactsFromCsv(
  text: string,
  country: CountryCode,
): { contacts: CsvContact[]; problems: CsvProblem[] } {
  const [header, ...rows] = parseCsv(text);
  if (!header) return { contacts: [], problems: [{ line: 1, message: 'the file is empty' }] };
  const names = header.cells.map((cell) => cell.trim());
  const phoneColumn = names.findIndex((name) => PHONE_HEADERS.includes(name.toLowerCase()));
  if (phoneColumn < 0) {
    return {
      contacts: [],
      problems: [
        { line: 1, message: `no phone number column: the header needs one of ${PHONE_HEADERS.join(', ')}` },
      ],
    };
  }
  const contacts: CsvContact[] = [];
  const problems: CsvProblem[] = [];
  const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
  for (const row of rows) {
    if (row.cells.length !== names.length) {
      problems.push({
        line: row.line,
        message: `has ${row.cells.length} cells, the header has ${names.length}`,
      });
      continue;
    }
    const reading = normalizePhone(row.cells[phoneColumn] ?? '', country);
    if (!reading.ok) {
      problems.push({ line: row.line, message: reading.reason });
      continue;
    }
    const contact: CsvContact = { phoneNumber: reading.number };
    const metadata: Record<string, string> = {};
    names.forEach((name, index) => {
      if (index === phoneColumn) return;
      const value = row.cells[index]?.trim() ?? '';
      if (value === '') return;
      const key = name.toLowerCase();
      if (KNOWN.has(key)) (contact as unknown as Record<string, string>)[key] = value;
      else metadata[name] = value;
    });
    if (contact.email && !emailPattern.test(contact.email)) {
      problems.push({ line: row.line, message: `"${contact.email}" is not an email address` });
      continue;
    }
    if (Object.keys(metadata).length > 0) contact.metadata = metadata;
    contacts.push(contact);
  }
  return { contacts, problems };
}
