import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_REWRITE_PATHS, TooManyPathsError, isPrefix, outermostPaths, rewriteAt, valueAt, withValueAt, type KeyPath } from '../../src/contract/key-path.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { createSecretVault, placeholder } from '../../src/domain/secrets.js';
import { keepShownSecrets, revealDefaultInput, sealDefaultInput } from '../../src/local-service/default-input.js';
import { validateInputPayload } from '../../src/local-service/validation.js';

/**
 * Rewriting many paths of a value in one pass (key-path.ts `rewriteAt`, `outermostPaths`), as
 * masking, sealing and revealing secrets do (docs/secrets.md#bounds): for generated values and
 * paths, the one pass gives what a write per path gave, and the bound is an error with a code.
 */

const key = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'a.b', '0', '1', '}}'));
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.string({ maxLength: 6 }), fc.integer(), fc.constant(null), fc.boolean(), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(key, tie('value'), { maxKeys: 4 })),
})).value;

/** Every path of a value that leads somewhere: the root, its containers and its leaves. */
function nodePaths(value: unknown, at: string[] = [], out: KeyPath[] = []): KeyPath[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((item, i) => nodePaths(item, [...at, String(i)], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) nodePaths(v, [...at, k], out);
  return out;
}

/** A value and some of its paths (and some that lead nowhere yet, under an object), none under another. */
// As a body parsed from JSON: plain objects (fast-check's have no prototype), `__proto__` an own key.
const valueAndPaths = json.map((v) => JSON.parse(JSON.stringify(v)) as unknown).chain((value) => {
  const nodes = nodePaths(value);
  const objects = nodes.filter((p) => { const v = valueAt(value, p); return v !== null && typeof v === 'object' && !Array.isArray(v); });
  // A fresh path starts with a key its object does not have, so it never gives an array a key
  // that is no index (which makes the array an object, and makes writes depend on their order).
  const fresh = objects.length === 0 ? fc.constant([] as KeyPath[]) : fc.array(fc.tuple(fc.constantFrom(...objects), fc.array(key, { minLength: 1, maxLength: 2 })).filter(([p, [first]]) => !Object.hasOwn(valueAt(value, p) as object, first!)).map(([p, rest]) => [...p, ...rest] as KeyPath), { maxLength: 3 });
  return fc.tuple(fc.constant(value), fc.subarray(nodes), fresh).map(([v, chosen, more]) => ({ value: v, paths: outermostNaive([...chosen, ...more]) }));
});

/** What the code did before: keep a path when none kept so far (shortest first) is its prefix. */
function outermostNaive(paths: readonly KeyPath[]): KeyPath[] {
  const kept: KeyPath[] = [];
  for (const path of [...paths].sort((a, b) => a.length - b.length)) if (!kept.some((outer) => isPrefix(outer, path))) kept.push(path);
  return kept;
}

/**
 * Deep equality, prototypes included, by Node's own comparison: vitest's `toStrictEqual` reads a
 * value's `constructor` property to compare types, which a payload key named `constructor` is.
 */
function expectSame(actual: unknown, expected: unknown): void {
  expect(isDeepStrictEqual(actual, expected), `${JSON.stringify(actual)} vs ${JSON.stringify(expected)}`).toBe(true);
}

const perPath = (value: unknown, paths: readonly KeyPath[], fn: (path: KeyPath, v: unknown) => unknown) => paths.reduce((out, path) => withValueAt(out, path, fn(path, valueAt(value, path))), value);

describe('rewriteAt: one pass, the result of a write per path', () => {
  it('gives what withValueAt path by path gives, leaves the value as it was, and touches no prototype', () => {
    fc.assert(
      fc.property(valueAndPaths, ({ value, paths }) => {
        const before = JSON.stringify(value);
        const fn = (path: KeyPath, v: unknown) => `${placeholder(path)}:${JSON.stringify(v) ?? 'none'}`;
        expectSame(rewriteAt(value, paths, fn), perPath(value, paths, fn));
        expect(JSON.stringify(value)).toBe(before);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(Object.prototype).not.toHaveProperty('0');
      }),
      { numRuns: 400 },
    );
  });

  it('outermostPaths keeps what a search of the kept paths per path kept', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.constantFrom('a', 'b', '0', '__proto__'), { maxLength: 4 }), { maxLength: 12 }), (paths) => {
        const ids = (list: readonly KeyPath[]) => list.map((p) => JSON.stringify(p)).sort();
        const naive = outermostNaive(paths).filter((p, i, all) => all.findIndex((q) => JSON.stringify(q) === JSON.stringify(p)) === i);
        expect(ids(outermostPaths(paths.map((path) => ({ path }))).map((x) => x.path))).toEqual(ids(naive));
      }),
      { numRuns: 400 },
    );
  });
});

describe('masking, sealing and revealing in one pass give what they gave path by path', () => {
  const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);

  it('a vault masks, a default input is sealed, opened and kept as per path, for generated payloads and marks', () => {
    fc.assert(
      fc.property(valueAndPaths, fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 4 }), ({ value, paths }, nested) => {
        // Marks may nest (a marked object and a marked member): only the outer one is a secret.
        const marks = [...paths, ...nested.flatMap(([i, j]) => { const p = paths[i % Math.max(paths.length, 1)]; const inner = p && nodePaths(valueAt(value, p))[j % 3]; return p && inner ? [[...p, ...inner]] : []; })];
        const present = outermostNaive(marks).filter((p) => valueAt(value, p) !== undefined && valueAt(value, p) !== null);
        const expected = perPath(value, present, (path) => placeholder(path));

        const vault = createSecretVault(value, {}, [], { marks: marks.map((path) => ({ path, totp: false })) });
        expectSame(vault.maskedPayload, expected);

        const stored = sealDefaultInput(value, marks, keys);
        expectSame(stored.masked, present.length === 0 ? value : expected);
        const version = { configuration: { inputPayload: stored.masked }, input_secrets: stored.sealed };
        expectSame(revealDefaultInput(version, keys), perPath(stored.masked, present, (path) => valueAt(value, path)));
        // An edit that sends the stored input back as shown gets every secret back.
        expectSame(keepShownSecrets(stored.masked, version, keys), revealDefaultInput(version, keys));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses more than MAX_REWRITE_PATHS secrets with a coded error: in the vault, in the local API’s check, in a default input', async () => {
    const size = MAX_REWRITE_PATHS + 1;
    const payload = Object.fromEntries(Array.from({ length: size }, (_, i) => [`f${i}`, `value-${i}`]));
    const paths = Object.keys(payload).map((k) => [k]);
    expect(() => rewriteAt(payload, paths, () => 'x')).toThrow(TooManyPathsError);
    expect(() => createSecretVault(payload, { additionalProperties: { writeOnly: true } })).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringContaining(`at most ${MAX_REWRITE_PATHS}`) }));
    await expect(validateInputPayload({ additionalProperties: { writeOnly: true } }, payload)).rejects.toMatchObject({ status: 422, detail: [{ loc: ['body', 'inputPayload'], type: 'too_many_secrets' }] });
    expect(() => sealDefaultInput(payload, paths, keys)).toThrow(expect.objectContaining({ status: 422, detail: [expect.objectContaining({ type: "too_many_secrets" })] }));
    // At the bound itself every one is masked.
    const atBound = Object.fromEntries(Object.entries(payload).slice(0, MAX_REWRITE_PATHS));
    const vault = createSecretVault(atBound, { additionalProperties: { writeOnly: true } });
    expect(vault.paths).toHaveLength(MAX_REWRITE_PATHS);
    expect(Object.values(vault.maskedPayload as Record<string, string>).every((v, i) => v === `{{f${i}}}`)).toBe(true);
  });
});
