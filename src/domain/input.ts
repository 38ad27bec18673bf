/**
 * What the service accepts as text and structure, whatever the field: the rules PostgreSQL and
 * the JSON we store impose on every string, applied to every request before any schema or SQL.
 */

/**
 * Objects and arrays a JSON body may nest. The deepest body the API defines is a batch contact's
 * metadata at level 3; 32 leaves 29 levels of the user's own, and keeps every walk over a body
 * (ours, PostgreSQL's jsonb parser) far from a stack limit (10,000 levels answered 500).
 */
export const MAX_JSON_DEPTH = 32;

/** The earliest and latest instant a date-time field accepts: years 1970 to 9999. */
export const MIN_INSTANT_MS = Date.UTC(1970, 0, 1);
export const MAX_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export type TextProblem = 'nul' | 'surrogate';

/**
 * NUL or a lone surrogate, in one scan (a 16 MB batch holds a million strings). With the u flag a
 * pair is one code point, so `\p{Surrogate}` matches only a surrogate without its partner.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this looks for.
const BAD_TEXT = /\u0000|\p{Surrogate}/u;

/**
 * Why a string cannot be stored: PostgreSQL refuses NUL in text and jsonb, and a lone UTF-16
 * surrogate cannot be written as UTF-8 (jsonb refuses its `\ud800` escape). Null when it can.
 */
export function textProblem(text: string): TextProblem | null {
  if (!BAD_TEXT.test(text)) return null;
  return text.includes('\u0000') ? 'nul' : 'surrogate';
}

export const TEXT_PROBLEM_MESSAGES: Record<TextProblem | 'depth', string> = {
  nul: 'must not contain a NUL character (\\u0000)',
  surrogate: 'must be well-formed Unicode (a lone surrogate such as \\ud800 is not)',
  depth: `nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`,
};

export interface InputProblem {
  /** `contacts.3.metadata.note` style; `(body)` for the whole value. */
  field: string;
  message: string;
}

interface Node {
  value: unknown;
  key: string;
  parent: Node | null;
  depth: number;
}

/**
 * The first string (value or key) that cannot be stored, the first `__proto__` key, or the first
 * value nested deeper than MAX_JSON_DEPTH, in a parsed JSON body or query string. Iterative, so
 * that a value nested a million deep costs a loop, not the stack; paths are built only for the
 * answer, so a 100,000-contact batch is walked in one pass without copying.
 */
export function findInputProblem(root: unknown, rootName = '(body)'): InputProblem | null {
  const top: Node = { value: root, key: rootName, parent: null, depth: 0 };
  if (typeof root === 'string') {
    const problem = textProblem(root);
    return problem ? { field: rootName, message: TEXT_PROBLEM_MESSAGES[problem] } : null;
  }
  // Only containers are pushed: strings are checked where they are met, and a Node (for the path
  // in the answer) is made for a string only when it is the answer. A 16 MB, 100,000-contact batch
  // walks in about 70 ms, as long as JSON.parse takes over it.
  const stack: Node[] = [top];
  const at = (parent: Node, key: string, value: unknown): Node => ({
    value,
    key,
    parent,
    depth: parent.depth + 1,
  });
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node) break;
    const { value, depth } = node;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { field: fieldName(node), message: TEXT_PROBLEM_MESSAGES.depth };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const child: unknown = value[i];
        if (typeof child === 'string') {
          const problem = textProblem(child);
          if (problem)
            return { field: fieldName(at(node, String(i), child)), message: TEXT_PROBLEM_MESSAGES[problem] };
        } else if (child !== null && typeof child === 'object') stack.push(at(node, String(i), child));
      }
      continue;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      const keyProblem = key === '__proto__' ? 'proto' : textProblem(key);
      if (keyProblem)
        return {
          field: fieldName(at(node, printable(key), null)),
          message: KEY_PROBLEM_MESSAGES[keyProblem],
        };
      const child = record[key];
      if (typeof child === 'string') {
        const problem = textProblem(child);
        if (problem)
          return { field: fieldName(at(node, key, child)), message: TEXT_PROBLEM_MESSAGES[problem] };
      } else if (child !== null && typeof child === 'object') stack.push(at(node, key, child));
    }
  }
  return null;
}

const KEY_PROBLEM_MESSAGES: Record<TextProblem | 'proto', string> = {
  nul: `is a key that ${TEXT_PROBLEM_MESSAGES.nul}`,
  surrogate: `is a key that ${TEXT_PROBLEM_MESSAGES.surrogate}`,
  // JSON.parse keeps it as a plain key, but any later Object.assign would set a prototype with it.
  proto: 'is a reserved key',
};

/** A date-time the database can store and give back: parsed, real (no 23:59:60) and in range. */
export function representableInstant(date: Date): boolean {
  const ms = date.getTime();
  return Number.isFinite(ms) && ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS;
}

/** `contacts.3.name`: the keys from the root's child down; the root's own name when it is the root. */
function fieldName(node: Node): string {
  const keys: string[] = [];
  for (let at: Node | null = node; at?.parent; at = at.parent) keys.push(at.key);
  if (keys.length === 0) return node.key;
  return keys.reverse().join('.');
}

/** A key named in an error message, with NUL and lone surrogates shown as escapes. */
function printable(key: string): string {
  return key
    .replaceAll('\u0000', '\\u0000')
    .replace(/\p{Surrogate}/gu, (s) => `\\u${s.charCodeAt(0).toString(16)}`);
}
