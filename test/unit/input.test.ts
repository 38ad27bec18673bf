import { describe, expect, it } from 'vitest';
import {
  findInputProblem,
  MAX_JSON_DEPTH,
  representableInstant,
  textProblem,
} from '../../src/domain/input.js';

describe('input rules', () => {
  it('finds NUL and lone surrogates, and lets pairs and other control characters through', () => {
    expect(textProblem('a\u0000b')).toBe('nul');
    expect(textProblem('a\ud800')).toBe('surrogate');
    expect(textProblem('\udfffa')).toBe('surrogate');
    expect(textProblem('😀 \u0001\u001f\ufeff')).toBeNull();
  });

  it('names the first bad value or key by its path', () => {
    expect(findInputProblem({ contacts: [{ name: 'ok' }, { name: 'a\u0000' }] })).toEqual({
      field: 'contacts.1.name',
      message: 'must not contain a NUL character (\\u0000)',
    });
    expect(findInputProblem({ metadata: { 'k\u0000': 1 } })?.field).toBe('metadata.k\\u0000');
    expect(findInputProblem(JSON.parse('{"m":{"__proto__":{"x":1}}}'))).toEqual({
      field: 'm.__proto__',
      message: 'is a reserved key',
    });
    expect(findInputProblem({ toString: 'x', constructor: { prototype: 1 } })).toBeNull();
    expect(findInputProblem({ agentId: '\u0000' }, '(query)')?.field).toBe('agentId');
    expect(findInputProblem('\u0000', '(query)')?.field).toBe('(query)');
  });

  it(`allows ${MAX_JSON_DEPTH} levels of nesting and refuses more, without recursion`, () => {
    const nest = (depth: number) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
    expect(findInputProblem(nest(MAX_JSON_DEPTH))).toBeNull();
    expect(findInputProblem(nest(MAX_JSON_DEPTH + 1))?.message).toMatch(/deeper than 32/);
    expect(findInputProblem(nest(1_000_000))?.message).toMatch(/deeper than 32/);
  });

  it('accepts instants from 1970 to 9999 only', () => {
    expect(representableInstant(new Date('2030-01-01T23:59:59Z'))).toBe(true);
    expect(representableInstant(new Date('2030-01-01T23:59:60Z'))).toBe(false);
    expect(representableInstant(new Date('+010000-01-01T00:00:00Z'))).toBe(false);
    expect(representableInstant(new Date('1969-12-31T23:59:59Z'))).toBe(false);
  });
});
