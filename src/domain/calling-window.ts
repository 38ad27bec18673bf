import { DateTime } from 'luxon';
import type { CallingWindow, Weekday } from './batch.js';
import { WEEKDAYS } from './batch.js';

/**
 * Calling windows (issue 15): a batch's `callingWindow` is read in each contact's own zone. A
 * contact is callable while its local wall clock is in [start, end) on one of `days`. Windows do
 * not cross midnight: "end after start" (a night window is not a compliance use, and refusing it
 * keeps "which day does 22:00-02:00 belong to" out of the rules); "24:00" is allowed as an end so
 * a window may run to midnight.
 */

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Minutes after local midnight of "HH:MM" ("24:00" is 1440), or null. */
function minuteOfDay(value: string, allowMidnightEnd: boolean): number | null {
  if (allowMidnightEnd && value === '24:00') return 1440;
  const match = HHMM.exec(value);
  if (!match) return null;
  return Number(match[1]) * 60 + Number(match[2]);
}

export function parseCallingWindow(input: unknown): { window: CallingWindow } | { errors: string[] } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return {
      errors: ['callingWindow must be an object {start: "HH:MM", end: "HH:MM", days?: ["mon", ...]}'],
    };
  }
  const record = input as Record<string, unknown>;
  const errors: string[] = [];
  for (const key of Object.keys(record)) {
    if (key !== 'start' && key !== 'end' && key !== 'days') {
      errors.push(`callingWindow.${key} is not a calling window field (start, end, days)`);
    }
  }
  const start = typeof record.start === 'string' ? minuteOfDay(record.start, false) : null;
  if (start === null) errors.push('callingWindow.start must be a 24-hour time "HH:MM" such as "08:00"');
  const end = typeof record.end === 'string' ? minuteOfDay(record.end, true) : null;
  if (end === null)
    errors.push('callingWindow.end must be a 24-hour time "HH:MM" such as "21:00" (or "24:00")');
  if (start !== null && end !== null && end <= start) {
    errors.push('callingWindow.end must be after callingWindow.start (windows do not cross midnight)');
  }
  let days: Weekday[] | undefined;
  if (record.days !== undefined) {
    if (!Array.isArray(record.days) || record.days.length === 0) {
      errors.push(`callingWindow.days must be a non-empty list of ${WEEKDAYS.join(', ')}`);
    } else {
      const given = new Set<string>();
      for (const day of record.days) {
        if (typeof day !== 'string' || !(WEEKDAYS as readonly string[]).includes(day)) {
          errors.push(`callingWindow.days: ${JSON.stringify(day)} is not one of ${WEEKDAYS.join(', ')}`);
        } else {
          given.add(day);
        }
      }
      // Week order, each day once: the stored window reads the same however it was written.
      days = WEEKDAYS.filter((day) => given.has(day));
    }
  }
  if (errors.length > 0) return { errors };
  const window: CallingWindow = { start: record.start as string, end: record.end as string };
  if (days) window.days = days;
  return { window };
}

/** The IANA zone a contact's window is read in: its own, else its number's, else the batch's. */
export function contactZone(contactTz: string | null, phone: string, batchTz: string): string {
  return contactTz ?? zoneForNumber(phone) ?? batchTz;
}

/**
 * The next instant at or after `at` when a contact in `zone` may be called: `at` itself when
 * inside the window (or there is no window), else the window's next opening. DST-correct: the
 * wall clock is read in the zone for each day, so an 08:00 opening is 08:00 local on both sides of
 * a change. An opening that falls in a spring-forward gap opens when the clock jumps past it.
 */
export function nextCallableAt(window: CallingWindow | null, zone: string, at: Date): Date {
  if (!window) return at;
  // The answer depends only on the minute `at` falls in (openings are whole minutes, after it), and
  // a claim asks for one `now` across a handful of zones: a luxon reading costs ~250 us, so 10,000
  // due contacts at 1,000 calls/s would spend 2.5 s a second without this memo.
  const minute = Math.floor(at.getTime() / 60_000);
  const key = `${zone}|${window.start}|${window.end}|${window.days?.join(',') ?? ''}|${minute}`;
  let opening = memo.get(key);
  if (opening === undefined) {
    opening = computeOpening(window, zone, new Date(minute * 60_000));
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(key, opening);
  }
  return opening === INSIDE ? at : new Date(opening);
}

const INSIDE = -1;
const MEMO_LIMIT = 10_000;
const memo = new Map<string, number>();

/** INSIDE when `at` (a whole minute) is in the window, else the epoch ms of the next opening. */
function computeOpening(window: CallingWindow, zone: string, at: Date): number {
  const start = minuteOfDay(window.start, false);
  const end = minuteOfDay(window.end, true);
  if (start === null || end === null || end <= start) return INSIDE; // parseCallingWindow never stores one
  const allowed = (weekday: number) => !window.days || window.days.includes(WEEKDAYS[weekday - 1] as Weekday);
  const local = DateTime.fromJSDate(at, { zone });
  if (!local.isValid) return INSIDE;
  const nowMinute = local.hour * 60 + local.minute;
  if (allowed(local.weekday) && nowMinute >= start && nowMinute < end) return INSIDE;
  for (let offset = 0; offset <= 7; offset += 1) {
    const day = offset === 0 ? local : local.plus({ days: offset });
    if (!allowed(day.weekday)) continue;
    if (offset === 0 && nowMinute >= start) continue;
    const opening = firstInstantAtOrAfter(day, start, zone, at);
    if (opening) return opening.getTime();
  }
  return INSIDE; // unreachable: a valid window has at least one day, met within 7 days
}

/**
 * The first instant after `after` on `day`'s date whose wall clock in `zone` reads `minute` or
 * later. Usually the instant of that wall time; in a DST gap the clock never reads it, and on a
 * fall-back day it may read it twice, so those cases look minute by minute (a gap or overlap is at
 * most 2 h in the tz database, so at most 180 steps, and only on those two days a year).
 */
function firstInstantAtOrAfter(day: DateTime, minute: number, zone: string, after: Date): Date | null {
  const target = DateTime.fromObject(
    { year: day.year, month: day.month, day: day.day, hour: Math.floor(minute / 60), minute: minute % 60 },
    { zone },
  );
  const exact = target.hour * 60 + target.minute === minute && target.day === day.day;
  // No offset change in the 3 h before: this wall time is read once, and `target` is its instant.
  const steady = DateTime.fromMillis(target.toMillis() - 180 * 60_000, { zone }).offset === target.offset;
  if (exact && steady && target.toMillis() > after.getTime()) return target.toJSDate();
  const from = Math.max(after.getTime() + 1, target.toMillis() - 180 * 60_000);
  const start = Math.ceil(from / 60_000) * 60_000;
  for (let step = 0; step <= 360; step += 1) {
    const probe = DateTime.fromMillis(start + step * 60_000, { zone });
    if (probe.day !== day.day) {
      if (probe.toMillis() > target.toMillis()) return null;
      continue;
    }
    if (probe.hour * 60 + probe.minute >= minute) return probe.toJSDate();
  }
  return null;
}

/** The window stored on a batch (batches.calling_window): days null when every day. */
export function windowToRow(
  window: CallingWindow | null,
): { start: string; end: string; days: Weekday[] | null } | null {
  return window ? { start: window.start, end: window.end, days: window.days ?? null } : null;
}

/** A window read back from batches.calling_window. */
export function windowFromRow(row: unknown): CallingWindow | null {
  if (row === null || row === undefined) return null;
  const value = typeof row === 'string' ? (JSON.parse(row) as unknown) : row;
  if (typeof value !== 'object' || value === null) return null;
  const { start, end, days } = value as { start?: unknown; end?: unknown; days?: unknown };
  const parsed = parseCallingWindow(
    days === null || days === undefined ? { start, end } : { start, end, days },
  );
  return 'window' in parsed ? parsed.window : null;
}

// ---------------------------------------------------------------------------------------------
// The zone of a number. Our own table: countries (by calling code) with one zone, NANP area codes
// (US, Canada, the Caribbean), and a few multi-zone countries by their geographic area codes.
// Where an area code spans two zones it maps to the zone most of its subscribers live in; a
// contact's own `timezone` overrides it. Unknown or mobile-only prefixes give null, and the batch's
// timezone applies. String slicing only: ingest calls this for every contact (100,000 a batch).
// ---------------------------------------------------------------------------------------------

const NANP_ZONES: Record<string, string> = {};
function nanp(zone: string, codes: string): void {
  for (const code of codes.split(' ')) NANP_ZONES[code] = zone;
}
// United States
nanp(
  'America/New_York',
  '201 202 203 207 212 215 216 220 223 227 229 234 239 240 252 267 272 276 283 301 302 304 305 315 321 324 326 ' +
    '329 330 332 336 339 347 351 352 363 380 386 401 404 407 410 412 413 419 423 434 436 440 443 445 470 472 475 ' +
    '478 484 502 508 513 516 518 540 551 561 567 570 571 582 585 586 603 606 607 609 610 614 617 624 631 640 645 ' +
    '646 656 667 678 680 681 686 689 703 704 706 716 717 718 724 727 728 732 740 743 754 757 762 770 771 772 774 ' +
    '781 786 802 803 804 813 814 826 828 835 838 839 843 845 848 854 856 857 859 860 862 863 864 865 878 904 908 ' +
    '910 912 914 917 919 929 934 937 941 943 948 954 959 973 978 980 984',
);
nanp('America/Detroit', '231 248 269 313 517 616 679 734 810 906 947 989');
nanp('America/Indiana/Indianapolis', '260 317 463 574 765 812 930');
nanp(
  'America/Chicago',
  '205 210 214 217 218 219 224 225 228 235 251 254 256 262 270 274 281 308 309 312 314 316 318 319 320 325 327 ' +
    '331 334 337 346 353 361 364 402 405 409 414 417 430 432 447 448 464 469 479 501 504 507 512 515 531 534 539 ' +
    '557 563 572 573 580 601 605 608 612 615 618 620 629 630 636 641 651 659 660 662 682 701 708 712 713 715 726 ' +
    '730 731 737 763 769 773 779 785 806 815 816 817 830 832 847 850 861 870 872 901 903 913 918 920 924 931 936 ' +
    '938 940 945 952 956 972 975 979 985',
);
nanp('America/Denver', '303 307 385 406 435 505 575 719 720 801 915 970 983');
nanp('America/Boise', '208 986');
nanp('America/Phoenix', '480 520 602 623 928');
nanp(
  'America/Los_Angeles',
  '206 209 213 253 279 310 323 341 350 360 369 408 415 424 425 442 458 503 509 510 530 541 559 562 564 619 626 ' +
    '628 650 657 661 669 702 707 714 725 747 760 775 805 818 820 831 840 858 909 916 925 949 951 971',
);
nanp('America/Anchorage', '907');
nanp('Pacific/Honolulu', '808');
nanp('America/Puerto_Rico', '787 939');
nanp('America/St_Thomas', '340');
nanp('Pacific/Guam', '671');
nanp('Pacific/Saipan', '670');
nanp('Pacific/Pago_Pago', '684');
// Canada (867, the three territories, spans four zones: null)
nanp('America/Edmonton', '368 403 587 780 825');
nanp('America/Vancouver', '236 250 257 604 672 778');
nanp('America/Winnipeg', '204 431 584');
nanp('America/Regina', '306 474 639');
nanp(
  'America/Toronto',
  '226 249 263 289 343 354 365 367 382 387 416 418 437 438 450 468 514 519 548 579 581 613 647 683 705 742 753 ' +
    '807 819 873 905 942',
);
nanp('America/Moncton', '428 506');
nanp('America/Halifax', '782 902');
nanp('America/St_Johns', '709 879');
// The Caribbean and Bermuda
nanp('America/Nassau', '242');
nanp('America/Barbados', '246');
nanp('America/Anguilla', '264');
nanp('America/Antigua', '268');
nanp('America/Tortola', '284');
nanp('America/Cayman', '345');
nanp('Atlantic/Bermuda', '441');
nanp('America/Grenada', '473');
nanp('America/Grand_Turk', '649');
nanp('America/Jamaica', '658 876');
nanp('America/Montserrat', '664');
nanp('America/Lower_Princes', '721');
nanp('America/St_Lucia', '758');
nanp('America/Dominica', '767');
nanp('America/St_Vincent', '784');
nanp('America/Santo_Domingo', '809 829 849');
nanp('America/Port_of_Spain', '868');
nanp('America/St_Kitts', '869');

/** Calling codes whose country (or every country sharing the code) keeps one zone. */
const SINGLE_ZONE: Record<string, string> = {
  '20': 'Africa/Cairo',
  '27': 'Africa/Johannesburg',
  '30': 'Europe/Athens',
  '31': 'Europe/Amsterdam',
  '32': 'Europe/Brussels',
  '33': 'Europe/Paris',
  '36': 'Europe/Budapest',
  '39': 'Europe/Rome',
  '40': 'Europe/Bucharest',
  '41': 'Europe/Zurich',
  '43': 'Europe/Vienna',
  '44': 'Europe/London',
  '45': 'Europe/Copenhagen',
  '46': 'Europe/Stockholm',
  '47': 'Europe/Oslo',
  '48': 'Europe/Warsaw',
  '49': 'Europe/Berlin',
  '51': 'America/Lima',
  '53': 'America/Havana',
  '54': 'America/Argentina/Buenos_Aires',
  '56': 'America/Santiago',
  '57': 'America/Bogota',
  '58': 'America/Caracas',
  '60': 'Asia/Kuala_Lumpur',
  '63': 'Asia/Manila',
  '64': 'Pacific/Auckland',
  '65': 'Asia/Singapore',
  '66': 'Asia/Bangkok',
  '81': 'Asia/Tokyo',
  '82': 'Asia/Seoul',
  '84': 'Asia/Ho_Chi_Minh',
  '86': 'Asia/Shanghai',
  '90': 'Europe/Istanbul',
  '91': 'Asia/Kolkata',
  '92': 'Asia/Karachi',
  '94': 'Asia/Colombo',
  '95': 'Asia/Yangon',
  '98': 'Asia/Tehran',
  '211': 'Africa/Juba',
  '212': 'Africa/Casablanca',
  '213': 'Africa/Algiers',
  '216': 'Africa/Tunis',
  '218': 'Africa/Tripoli',
  '220': 'Africa/Banjul',
  '221': 'Africa/Dakar',
  '233': 'Africa/Accra',
  '234': 'Africa/Lagos',
  '251': 'Africa/Addis_Ababa',
  '254': 'Africa/Nairobi',
  '255': 'Africa/Dar_es_Salaam',
  '256': 'Africa/Kampala',
  '260': 'Africa/Lusaka',
  '263': 'Africa/Harare',
  '352': 'Europe/Luxembourg',
  '353': 'Europe/Dublin',
  '354': 'Atlantic/Reykjavik',
  '356': 'Europe/Malta',
  '357': 'Asia/Nicosia',
  '358': 'Europe/Helsinki',
  '359': 'Europe/Sofia',
  '370': 'Europe/Vilnius',
  '371': 'Europe/Riga',
  '372': 'Europe/Tallinn',
  '380': 'Europe/Kiev',
  '381': 'Europe/Belgrade',
  '385': 'Europe/Zagreb',
  '386': 'Europe/Ljubljana',
  '420': 'Europe/Prague',
  '421': 'Europe/Bratislava',
  '502': 'America/Guatemala',
  '503': 'America/El_Salvador',
  '504': 'America/Tegucigalpa',
  '505': 'America/Managua',
  '506': 'America/Costa_Rica',
  '507': 'America/Panama',
  '591': 'America/La_Paz',
  '595': 'America/Asuncion',
  '598': 'America/Montevideo',
  '852': 'Asia/Hong_Kong',
  '880': 'Asia/Dhaka',
  '886': 'Asia/Taipei',
  '961': 'Asia/Beirut',
  '962': 'Asia/Amman',
  '965': 'Asia/Kuwait',
  '966': 'Asia/Riyadh',
  '968': 'Asia/Muscat',
  '971': 'Asia/Dubai',
  '972': 'Asia/Jerusalem',
  '973': 'Asia/Bahrain',
  '974': 'Asia/Qatar',
  '977': 'Asia/Kathmandu',
};

function table(entries: Array<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [zone, prefixes] of entries) for (const prefix of prefixes.split(' ')) out[prefix] = zone;
  return out;
}

const RU_ZONES = table([
  ['Europe/Moscow', '495 496 498 499 812 813 831 843 861 862 863 473'],
  ['Europe/Kaliningrad', '4012'],
  ['Europe/Samara', '846 848'],
  ['Asia/Yekaterinburg', '343 351'],
  ['Asia/Omsk', '3812'],
  ['Asia/Novosibirsk', '383'],
  ['Asia/Krasnoyarsk', '391'],
  ['Asia/Irkutsk', '3952'],
  ['Asia/Vladivostok', '423'],
]);

const BR_ZONES = table([
  [
    'America/Sao_Paulo',
    '11 12 13 14 15 16 17 18 19 21 22 24 27 28 31 32 33 34 35 37 38 41 42 43 44 45 46 47 48 49 51 53 54 55 61 62 64',
  ],
  ['America/Araguaina', '63'],
  ['America/Cuiaba', '65 66'],
  ['America/Campo_Grande', '67'],
  ['America/Rio_Branco', '68'],
  ['America/Porto_Velho', '69'],
  ['America/Bahia', '71 73 74 75 77'],
  ['America/Maceio', '79 82'],
  ['America/Recife', '81 83 87'],
  ['America/Fortaleza', '84 85 86 88 89 98 99'],
  ['America/Belem', '91 94 96'],
  ['America/Santarem', '93'],
  ['America/Manaus', '92 97'],
  ['America/Boa_Vista', '95'],
]);

const AU_ZONES = table([
  ['Australia/Sydney', '2'],
  ['Australia/Melbourne', '3'],
  ['Australia/Brisbane', '7'],
  ['Australia/Perth', '86 89'],
]);

const MX_ZONES = table([
  ['America/Mexico_City', '55 56 33 81 222 442 477'],
  ['America/Tijuana', '664 665 686 646'],
  ['America/Hermosillo', '662 631 642 644'],
  ['America/Mazatlan', '667 669 612 624 311'],
  ['America/Cancun', '998 984 983 987'],
]);

const ID_ZONES = table([
  ['Asia/Jakarta', '21 22 24 31 61 274'],
  ['Asia/Makassar', '361 411'],
  ['Asia/Jayapura', '967'],
]);

/** Multi-zone countries read by the geographic area code after the calling code; null elsewhere. */
const BY_REGION: Record<string, (national: string) => string | null> = {
  // Spain: the Canary Islands (landlines 822/828/922/928) are an hour behind the mainland.
  '34': (n) => (/^(822|828|922|928)/.test(n) ? 'Atlantic/Canary' : 'Europe/Madrid'),
  // Portugal: the Azores (landlines 292/295/296) are an hour behind; Madeira keeps Lisbon's time.
  '351': (n) => (/^(292|295|296)/.test(n) ? 'Atlantic/Azores' : 'Europe/Lisbon'),
  // Russia (Kazakhstan shares +7 with 6xx/7xx and is left to the batch's zone); mobiles (9xx) are
  // not geographic.
  '7': (n) => prefixZone(n, RU_ZONES),
  // Brazil: the two-digit DDD names the state, mobiles included.
  '55': (n) => prefixZone(n, BR_ZONES),
  // Australia: 2 NSW/ACT, 3 VIC/TAS, 7 QLD, 8 then 6/9 WA; 8 8 is South Australia or the Northern
  // Territory (different rules): null, like mobiles (4).
  '61': (n) => prefixZone(n, AU_ZONES),
  // Mexico: the large cities and the states off Central time; the rest is null.
  '52': (n) => prefixZone(n, MX_ZONES),
  // Indonesia: a few city codes in each of its three zones; mobiles (8xx) are null.
  '62': (n) => prefixZone(n, ID_ZONES),
};

/** The longest prefix of `national` (up to 4 digits) in `zones`. */
function prefixZone(national: string, zones: Record<string, string>): string | null {
  for (let length = 4; length >= 1; length -= 1) {
    const zone = zones[national.slice(0, length)];
    if (zone) return zone;
  }
  return null;
}

/**
 * The IANA zone of an E.164 number when its country, or its region within a multi-zone country,
 * has one; null otherwise. Calling codes are prefix-free, so the first of 1, 2 or 3 digits found
 * is the code.
 */
export function zoneForNumber(e164: string): string | null {
  if (!/^\+\d{7,15}$/.test(e164)) return null;
  const digits = e164.slice(1);
  if (digits.startsWith('1')) return NANP_ZONES[digits.slice(1, 4)] ?? null;
  for (let length = 1; length <= 3; length += 1) {
    const code = digits.slice(0, length);
    const regional = BY_REGION[code];
    if (regional) {
      let national = digits.slice(length);
      // Mexico's mobiles once carried a 1 after the calling code (+52 1 55 ...).
      if (code === '52' && national.length === 11 && national.startsWith('1')) national = national.slice(1);
      return regional(national);
    }
    const single = SINGLE_ZONE[code];
    if (single) return single;
  }
  return null;
}

/** Every zone the tables above name: the unit tests check each is known to this runtime. */
export function knownNumberZones(): string[] {
  const zones = new Set<string>([...Object.values(NANP_ZONES), ...Object.values(SINGLE_ZONE)]);
  for (const t of [RU_ZONES, BR_ZONES, AU_ZONES, MX_ZONES, ID_ZONES])
    for (const z of Object.values(t)) zones.add(z);
  return [...zones].sort();
}

/** A contact's `timezone` field: an IANA zone name this runtime knows. */
export function isContactZone(value: string): boolean {
  // Names only: luxon would also take "local", "system" or "UTC+3", which are no IANA zones.
  if (value.length > 64 || !/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}
