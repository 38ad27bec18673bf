import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { representableInstant } from '../domain/input.js';
import { ErrorBody } from './schemas/common.js';

export function makeAjv(options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, ...options });
  addFormats.default(ajv);
  // RFC 3339 allows a leap second (23:59:60) that no Date can hold, and any year: a date-time is
  // accepted only if it is a real instant the database stores and gives back (1970 to 9999).
  const rfc3339 = fullFormats['date-time'];
  const wellFormed = (text: string): boolean =>
    typeof rfc3339 === 'object' &&
    'validate' in rfc3339 &&
    typeof rfc3339.validate === 'function' &&
    (rfc3339.validate as (value: string) => boolean)(text);
  ajv.addFormat('date-time', (text: string) => wellFormed(text) && representableInstant(new Date(text)));
  ajv.addSchema(ErrorBody);
  return ajv;
}
