import { describe, expect, it } from 'vitest';
import type { CallingWindow } from '../../src/domain/batch.js';
import {
  contactZone,
  isContactZone,
  knownNumberZones,
  nextCallableAt,
  parseCallingWindow,
  windowFromRow,
  windowToRow,
  zoneForNumber,
} from '../../src/domain/calling-window.js';

const iso = (date: Date) => date.toISOString();

describe('parseCallingWindow', () => {
  it('accepts a window with and without days', () => {
    expect(parseCallingWindow({ start: '08:00', end: '21:00' })).toEqual({
      window: { start: '08:00', end: '21:00' },
    });
    expect(parseCallingWindow({ start: '09:30', end: '17:45', days: ['fri', 'mon', 'mon'] })).toEqual({
      window: { start: '09:30', end: '17:45', days: ['mon', 'fri'] },
    });
  });

  it('accepts 24:00 as an end and 00:00 as a start', () => {
    expect(parseCallingWindow({ start: '00:00', end: '24:00' })).toEqual({
      window: { start: '00:00', end: '24:00' },
    });
  });

  it.each([
    ['not an object', 'all day', 'callingWindow must be an object'],
    ['an array', ['08:00', '21:00'], 'callingWindow must be an object'],
    ['null', null, 'callingWindow must be an object'],
    ['missing start', { end: '21:00' }, 'callingWindow.start'],
    ['missing end', { start: '08:00' }, 'callingWindow.end'],
    ['one-digit hour', { start: '8:00', end: '21:00' }, 'callingWindow.start'],
    ['hour 24 as start', { start: '24:00', end: '24:00' }, 'callingWindow.start'],
    ['minute 60', { start: '08:60', end: '21:00' }, 'callingWindow.start'],
    ['hour 25', { start: '08:00', end: '25:00' }, 'callingWindow.end'],
    ['seconds', { start: '08:00:00', end: '21:00' }, 'callingWindow.start'],
    ['number', { start: 800, end: '21:00' }, 'callingWindow.start'],
    ['end before start', { start: '21:00', end: '08:00' }, 'callingWindow.end must be after'],
    ['end equal to start', { start: '08:00', end: '08:00' }, 'callingWindow.end must be after'],
    ['empty days', { start: '08:00', end: '21:00', days: [] }, 'callingWindow.days'],
    ['days not a list', { start: '08:00', end: '21:00', days: 'mon' }, 'callingWindow.days'],
    ['unknown day', { start: '08:00', end: '21:00', days: ['mon', 'Monday'] }, 'callingWindow.days'],
    ['capital day', { start: '08:00', end: '21:00', days: ['Mon'] }, 'callingWindow.days'],
    ['unknown field', { start: '08:00', end: '21:00', zone: 'UTC' }, 'callingWindow.zone'],
  ])('refuses %s, naming the field', (_label, input, message) => {
    const result = parseCallingWindow(input);
    expect('errors' in result).toBe(true);
    if ('errors' in result) expect(result.errors.join('; ')).toContain(message);
  });

  it('round-trips through the stored row', () => {
    const window: CallingWindow = { start: '08:00', end: '21:00', days: ['mon', 'tue'] };
    expect(windowFromRow(windowToRow(window))).toEqual(window);
    expect(windowToRow({ start: '08:00', end: '21:00' })).toEqual({
      start: '08:00',
      end: '21:00',
      days: null,
    });
    expect(windowFromRow({ start: '08:00', end: '21:00', days: null })).toEqual({
      start: '08:00',
      end: '21:00',
    });
    expect(windowFromRow(JSON.stringify({ start: '08:00', end: '21:00', days: null }))).toEqual({
      start: '08:00',
      end: '21:00',
    });
    expect(windowFromRow(null)).toBeNull();
    expect(windowToRow(null)).toBeNull();
  });
});

describe('nextCallableAt', () => {
  const window: CallingWindow = { start: '08:00', end: '21:00' };

  it('is the same instant with no window', () => {
    const at = new Date('2025-03-05T03:00:00Z');
    expect(nextCallableAt(null, 'America/New_York', at)).toBe(at);
  });

  it('is the same instant inside the window, at its opening minute and just before its end', () => {
    // 2025-03-05 is a Wednesday; New York is UTC-5 then.
    for (const instant of [
      '2025-03-05T13:00:00.000Z',
      '2025-03-05T15:00:00.000Z',
      '2025-03-06T01:59:59.000Z',
    ]) {
      const at = new Date(instant);
      expect(iso(nextCallableAt(window, 'America/New_York', at))).toBe(instant);
    }
  });

  it('before the opening waits for it the same day', () => {
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-05T12:59:59Z')))).toBe(
      '2025-03-05T13:00:00.000Z',
    );
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-05T06:00:00Z')))).toBe(
      '2025-03-05T13:00:00.000Z',
    );
  });

  it('at the end (exclusive) and after it waits for the next day', () => {
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-06T02:00:00Z')))).toBe(
      '2025-03-06T13:00:00.000Z',
    );
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-06T04:30:00Z')))).toBe(
      '2025-03-06T13:00:00.000Z',
    );
  });

  it('reads the window in the zone given: the same instant is open in one zone and closed in another', () => {
    const at = new Date('2025-03-05T14:00:00Z'); // 09:00 New York, 06:00 Los Angeles, 23:00 Tokyo
    expect(iso(nextCallableAt(window, 'America/New_York', at))).toBe(iso(at));
    expect(iso(nextCallableAt(window, 'America/Los_Angeles', at))).toBe('2025-03-05T16:00:00.000Z');
    expect(iso(nextCallableAt(window, 'Asia/Tokyo', at))).toBe('2025-03-05T23:00:00.000Z');
    expect(iso(nextCallableAt(window, 'Asia/Kolkata', at))).toBe(iso(at)); // 19:30
  });

  it('skips days not in the list', () => {
    const weekdays: CallingWindow = {
      start: '09:00',
      end: '17:00',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
    };
    // Friday 2025-03-07 18:00 in London (UTC+0) -> Monday 09:00.
    expect(iso(nextCallableAt(weekdays, 'Europe/London', new Date('2025-03-07T18:00:00Z')))).toBe(
      '2025-03-10T09:00:00.000Z',
    );
    // Saturday noon -> Monday 09:00.
    expect(iso(nextCallableAt(weekdays, 'Europe/London', new Date('2025-03-08T12:00:00Z')))).toBe(
      '2025-03-10T09:00:00.000Z',
    );
    // A single day, already past: a week later.
    const sundays: CallingWindow = { start: '10:00', end: '12:00', days: ['sun'] };
    expect(iso(nextCallableAt(sundays, 'UTC', new Date('2025-03-09T12:00:00Z')))).toBe(
      '2025-03-16T10:00:00.000Z',
    );
    expect(iso(nextCallableAt(sundays, 'UTC', new Date('2025-03-09T11:00:00Z')))).toBe(
      '2025-03-09T11:00:00.000Z',
    );
  });

  it('reads the day in the contact zone, not in UTC', () => {
    const mondays: CallingWindow = { start: '08:00', end: '21:00', days: ['mon'] };
    // Sunday 2025-03-09 23:30 UTC is Monday 10:30 in Sydney (UTC+11): open there.
    const at = new Date('2025-03-09T23:30:00Z');
    expect(iso(nextCallableAt(mondays, 'Australia/Sydney', at))).toBe(iso(at));
    // ...and Sunday 16:30 in Los Angeles (PDT from 2025-03-09): Monday 08:00 PDT.
    expect(iso(nextCallableAt(mondays, 'America/Los_Angeles', at))).toBe('2025-03-10T15:00:00.000Z');
  });

  it('is DST-correct across the spring change: 08:00 local on both sides', () => {
    // New York springs forward on Sunday 2025-03-09 (02:00 EST -> 03:00 EDT).
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-09T02:30:00Z')))).toBe(
      '2025-03-09T12:00:00.000Z', // 08:00 EDT
    );
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-08T03:00:00Z')))).toBe(
      '2025-03-08T13:00:00.000Z', // 08:00 EST, the day before
    );
    // 20:30 EDT on the change day is open, 21:00 EDT closed.
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-10T00:30:00Z')))).toBe(
      '2025-03-10T00:30:00.000Z',
    );
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-03-10T01:00:00Z')))).toBe(
      '2025-03-10T12:00:00.000Z',
    );
  });

  it('is DST-correct across the autumn change', () => {
    // New York falls back on Sunday 2025-11-02 (02:00 EDT -> 01:00 EST): 08:00 EST is 13:00 UTC.
    expect(iso(nextCallableAt(window, 'America/New_York', new Date('2025-11-02T05:00:00Z')))).toBe(
      '2025-11-02T13:00:00.000Z',
    );
    // Berlin falls back on 2025-10-26: 08:00 CET is 07:00 UTC; the day before 08:00 CEST is 06:00 UTC.
    expect(iso(nextCallableAt(window, 'Europe/Berlin', new Date('2025-10-25T20:00:00Z')))).toBe(
      '2025-10-26T07:00:00.000Z',
    );
    expect(iso(nextCallableAt(window, 'Europe/Berlin', new Date('2025-10-25T03:00:00Z')))).toBe(
      '2025-10-25T06:00:00.000Z',
    );
  });

  it('opens a window whose start falls in the spring gap when the clock jumps past it', () => {
    const night: CallingWindow = { start: '02:30', end: '05:00' };
    // 2025-03-09 01:00 EST (06:00 UTC): the clock jumps from 02:00 EST to 03:00 EDT at 07:00 UTC.
    expect(iso(nextCallableAt(night, 'America/New_York', new Date('2025-03-09T06:00:00Z')))).toBe(
      '2025-03-09T07:00:00.000Z',
    );
  });

  it('opens a window whose start is repeated in the autumn overlap at the next reading', () => {
    const late: CallingWindow = { start: '01:30', end: '05:00' };
    // 2025-11-02 01:10 EST (06:10 UTC) is the second 01:10; the clock reads 01:30 again at 06:30 UTC.
    expect(iso(nextCallableAt(late, 'America/New_York', new Date('2025-11-02T06:10:00Z')))).toBe(
      '2025-11-02T06:30:00.000Z',
    );
    // Before the first 01:30 EDT (05:30 UTC) it opens at that first one.
    expect(iso(nextCallableAt(late, 'America/New_York', new Date('2025-11-02T04:00:00Z')))).toBe(
      '2025-11-02T05:30:00.000Z',
    );
  });

  it('runs to midnight with an end of 24:00', () => {
    const evening: CallingWindow = { start: '18:00', end: '24:00' };
    expect(iso(nextCallableAt(evening, 'UTC', new Date('2025-03-05T23:59:00Z')))).toBe(
      '2025-03-05T23:59:00.000Z',
    );
    expect(iso(nextCallableAt(evening, 'UTC', new Date('2025-03-06T00:00:00Z')))).toBe(
      '2025-03-06T18:00:00.000Z',
    );
  });
});

describe('zoneForNumber', () => {
  it.each([
    ['+14155550123', 'America/Los_Angeles'],
    ['+12125550123', 'America/New_York'],
    ['+13125550123', 'America/Chicago'],
    ['+13035550123', 'America/Denver'],
    ['+16025550123', 'America/Phoenix'],
    ['+19075550123', 'America/Anchorage'],
    ['+18085550123', 'Pacific/Honolulu'],
    ['+13135550123', 'America/Detroit'],
    ['+19155550123', 'America/Denver'], // El Paso
    ['+14165550123', 'America/Toronto'],
    ['+16045550123', 'America/Vancouver'],
    ['+14035550123', 'America/Edmonton'],
    ['+17095550123', 'America/St_Johns'],
    ['+17875550123', 'America/Puerto_Rico'],
    ['+18765550123', 'America/Jamaica'],
    ['+442071838750', 'Europe/London'],
    ['+33142685300', 'Europe/Paris'],
    ['+4930123456', 'Europe/Berlin'],
    ['+919876543210', 'Asia/Kolkata'],
    ['+966501234567', 'Asia/Riyadh'],
    ['+819012345678', 'Asia/Tokyo'],
    ['+34911234567', 'Europe/Madrid'],
    ['+34922123456', 'Atlantic/Canary'],
    ['+351213456789', 'Europe/Lisbon'],
    ['+351296123456', 'Atlantic/Azores'],
    ['+74951234567', 'Europe/Moscow'],
    ['+73431234567', 'Asia/Yekaterinburg'],
    ['+5511987654321', 'America/Sao_Paulo'],
    ['+5592987654321', 'America/Manaus'],
    ['+61212345678', 'Australia/Sydney'],
    ['+61892345678', 'Australia/Perth'],
    ['+525512345678', 'America/Mexico_City'],
    ['+5215512345678', 'America/Mexico_City'],
    ['+526641234567', 'America/Tijuana'],
    ['+62215551234', 'Asia/Jakarta'],
  ])('%s is in %s', (number, zone) => {
    expect(zoneForNumber(number)).toBe(zone);
  });

  it.each([
    ['a NANP code that is no area code', '+15555550123'],
    ['the Canadian territories (four zones)', '+18675550123'],
    ['a Russian mobile', '+79161234567'],
    ['an Australian mobile', '+61412345678'],
    ['South Australia or the Northern Territory', '+61881234567'],
    ['an Indonesian mobile', '+628123456789'],
    ['a country left out (DR Congo, two zones)', '+243812345678'],
    ['not E.164', '4155550123'],
    ['empty', ''],
  ])('is null for %s', (_label, number) => {
    expect(zoneForNumber(number)).toBeNull();
  });

  it('names only zones this runtime knows', () => {
    for (const zone of knownNumberZones()) expect(isContactZone(zone), zone).toBe(true);
  });

  it('is cheap enough for ingest: 100,000 numbers well under a second', () => {
    const started = performance.now();
    for (let i = 0; i < 100_000; i += 1) zoneForNumber(`+1415555${String(i % 10_000).padStart(4, '0')}`);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('contactZone', () => {
  it("takes the contact's own zone first", () => {
    expect(contactZone('Europe/Paris', '+14155550123', 'UTC')).toBe('Europe/Paris');
  });
  it("then the number's zone", () => {
    expect(contactZone(null, '+14155550123', 'UTC')).toBe('America/Los_Angeles');
  });
  it("then the batch's zone", () => {
    expect(contactZone(null, '+15555550123', 'Asia/Tokyo')).toBe('Asia/Tokyo');
  });
});

describe('isContactZone', () => {
  it.each(['America/New_York', 'UTC', 'Europe/London', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5'])(
    'accepts %s',
    (zone) => {
      expect(isContactZone(zone)).toBe(true);
    },
  );
  it.each([
    'Mars/Olympus_Mons',
    'local',
    'system',
    '+05:00',
    'UTC+3',
    '',
    'America/New York',
    'x'.repeat(80),
  ])('refuses %s', (zone) => {
    expect(isContactZone(zone)).toBe(false);
  });
});
