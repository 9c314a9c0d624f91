import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPath, leavesOf, parsePath, pathId, valueAt, withValueAt, type KeyPath } from '../../src/contract/key-path.js';

/** Keys as outsiders write them: anything, with the dangerous and confusing ones often. */
const key = fc.oneof(
  fc.string(),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', '.', '..', 'a.b', '[0]', '"', '\\', ']', '["x"]', '{{a}}', '0', '01', 'U.S. total'),
  fc.nat({ max: 20 }).map(String),
);
const path = fc.array(key, { maxLength: 6 });

describe('key paths', () => {
  it('a path written as text reads back as the same path, whatever its keys', () => {
    fc.assert(
      fc.property(path, (p) => {
        expect(parsePath(formatPath(p))).toEqual(p);
      }),
    );
  });

  it('two different paths never have the same text or id', () => {
    fc.assert(
      fc.property(path, path, (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        expect(formatPath(a)).not.toBe(formatPath(b));
        expect(pathId(a)).not.toBe(pathId(b));
      }),
    );
  });

  it('writes the simple forms people write', () => {
    expect(formatPath(['login', 'password'])).toBe('login.password');
    expect(formatPath(['cards', '0', 'pin'])).toBe('cards.0.pin');
    expect(formatPath(['totals', 'U.S. total'])).toBe('totals["U.S. total"]');
    expect(parsePath('cards[0].pin')).toEqual(['cards', '0', 'pin']);
    expect(parsePath(' login.password ')).toEqual(['login', 'password']);
    for (const bad of ['.a', 'a.', 'a..b', 'a b', '["x"', 'a["x"]b', "['x']", '[x]']) expect(parsePath(bad)).toBeUndefined();
  });

  it('a write with any keys changes no prototype and reads back', () => {
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 6 }), fc.jsonValue(), fc.jsonValue(), (p, root, value) => {
        const before = Object.getOwnPropertyNames(Object.prototype).length;
        const original = JSON.stringify(root);
        const written = withValueAt(root, p, value);
        expect(valueAt(written, p)).toEqual(value);
        expect(Object.getOwnPropertyNames(Object.prototype).length).toBe(before);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        // The original is untouched.
        expect(JSON.stringify(root)).toBe(original);
      }),
    );
  });

  it('a read never finds what a prototype holds', () => {
    expect(valueAt({}, ['constructor', 'prototype'])).toBeUndefined();
    expect(valueAt({ a: [] }, ['a', 'length'])).toBeUndefined();
    expect(valueAt('text', ['length'])).toBeUndefined();
    const polluted = withValueAt({}, ['__proto__', 'polluted'], true) as Record<string, unknown>;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(polluted)).toEqual(['__proto__']);
    expect(valueAt(polluted, ['__proto__', 'polluted'])).toBe(true);
  });

  it('every leaf of a value is found at its path', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const leaf of leavesOf(value)) expect(valueAt(value, leaf.path as KeyPath)).toEqual(leaf.value);
      }),
    );
  });
});
