/**
 * Property tests of every function that turns keys and values from outside (a caller's input, a
 * model's text, a stored entry) into paths, names or values (docs/run-cache.md#inputs-by-reference,
 * docs/run-cache.md#what-it-holds): any key round-trips, none reaches a prototype, a name is
 * replaced by its own value only, and nothing is read twice.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeInput } from '../../src/agent/prompt.js';
import { enterText, enterValue, placeholderOf, placeholdersIn } from '../../src/domain/input-references.js';
import { leavesOf, pathId, withValueAt, type KeyPath } from '../../src/contract/key-path.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { buildEntry } from '../../src/run-cache/entry.js';
import { parseCacheEntry } from '../../src/run-cache/format.js';
import { changedPaths, inputDigests, inputLeaves, tieAction } from '../../src/run-cache/values.js';

/** Keys as outsiders write them: anything, with the dangerous and confusing ones often. */
const key = fc.oneof(
  fc.string(),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '', '.', 'a.b', '[0]', '"', '\\', ']', '}}', '{{a}}', '0', 'U.S. total', 'profile'),
  fc.nat({ max: 5 }).map(String),
);
const path = fc.array(key, { minLength: 1, maxLength: 4 });
const scalar = fc.oneof(fc.string(), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant('Kofi Mensah'), fc.constant('{{other}}'));
/** An input payload with outsiders' keys: own properties only, however they are spelled. */
const payload = fc.array(fc.tuple(path, scalar), { minLength: 1, maxLength: 8 }).map((pairs) => pairs.reduce<unknown>((root, [p, v]) => withValueAt(root, p, v), {}));
/** Text with no braces, around a name. */
const plain = fc.string().filter((s) => !/[{}]/.test(s));

const scalars = (input: unknown) => leavesOf(input).filter((l): l is { path: KeyPath; value: string | number | boolean } => l.path.length > 0 && l.value !== null);
const untouched = () => {
  expect(({} as Record<string, unknown>).profile).toBeUndefined();
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
};

describe('names of input values', () => {
  it('a name written in any text is found whole, at its place, with its path', () => {
    fc.assert(
      fc.property(path, plain, plain, (p, before, after) => {
        const name = placeholderOf(p);
        expect(placeholdersIn(before + name + after)).toEqual([{ start: before.length, end: before.length + name.length, path: p }]);
      }),
    );
  });

  it('puts in the value a name names, of its type alone as a form value, and nothing else', () => {
    fc.assert(
      fc.property(payload, plain, (input, around) => {
        const vault = createSecretVault(input, undefined);
        for (const leaf of scalars(input)) {
          const name = placeholderOf(leaf.path);
          expect(enterText(vault, `${around}${name}${around}`)).toEqual({ text: `${around}${String(leaf.value)}${around}`, secret: false });
          expect(enterValue(vault, name)).toEqual({ value: leaf.value, secret: false });
        }
        untouched();
      }),
    );
  });

  it('leaves a name of nothing as it is written, whatever its keys, and reaches no prototype', () => {
    fc.assert(
      fc.property(payload, fc.constantFrom<KeyPath>(['__proto__', 'profile'], ['constructor', 'prototype', 'profile'], ['toString'], ['hasOwnProperty'], ['a', 'length']), (input, p) => {
        fc.pre(scalars(input).every((l) => pathId(l.path) !== pathId(p)));
        const vault = createSecretVault(input, undefined);
        const text = `x ${placeholderOf(p)} y`;
        expect(enterText(vault, text)).toEqual({ text, secret: false });
        untouched();
      }),
    );
  });

  it('reads nothing twice: a value that holds a name is entered as it is', () => {
    fc.assert(
      fc.property(path, path, fc.string(), (a, b, value) => {
        fc.pre(pathId(a) !== pathId(b) && !pathId(b).startsWith(pathId(a).slice(0, -1)) && !pathId(a).startsWith(pathId(b).slice(0, -1)));
        const input = withValueAt(withValueAt({}, b, value), a, `see ${placeholderOf(b)}`);
        expect(enterText(createSecretVault(input, undefined), placeholderOf(a)).text).toBe(`see ${placeholderOf(b)}`);
      }),
    );
  });

  it('reveals a secret only through its own name, and never lists or hashes its value', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 8 }).filter((s) => s.trim().length >= 8 && !/[{}]/.test(s)), fc.string(), (secret, other) => {
        fc.pre(!other.includes(secret) && !secret.includes(other));
        const vault = createSecretVault({ login: { password: secret }, note: other }, { type: 'object', properties: { login: { type: 'object', properties: { password: { type: 'string', writeOnly: true } } } } });
        expect(enterValue(vault, '{{login.password}}')).toEqual({ value: secret, secret: true });
        expect(enterText(vault, 'a {{note}} b')).toEqual({ text: `a ${other} b`, secret: false });
        expect(inputLeaves(vault).map((l) => l.path)).toEqual([['note']]);
        expect(describeInput(vault.maskedPayload, vault.paths)).not.toContain(secret);
        expect(JSON.stringify(inputDigests(inputLeaves(vault), 'salt'))).not.toContain(secret);
      }),
      // Each case compiles a vault's redaction of every form of the secret: fewer cases, same reach.
      { numRuns: 25 },
    );
  });
});

describe('the input as the model is shown it', () => {
  it('names every value by a name that reads back to its path, and shows the value', () => {
    fc.assert(
      fc.property(payload, (input) => {
        const vault = createSecretVault(input, undefined);
        const shown = describeInput(vault.maskedPayload, vault.paths) ?? '';
        const lines = shown.split('\n');
        for (const leaf of scalars(input)) {
          const line = `${placeholderOf(leaf.path)} = ${JSON.stringify(leaf.value)}`;
          expect(lines).toContain(line);
          // What the model reads as the name is the path of that value.
          expect(placeholdersIn(line)[0]?.path).toEqual(leaf.path);
        }
        untouched();
      }),
    );
  });
});

describe('what a cached action depends on', () => {
  it('ties a value to its path exactly when the model entered it by name', () => {
    fc.assert(
      fc.property(payload, (input) => {
        const vault = createSecretVault(input, undefined);
        const ctx = { input: vault, leaves: inputLeaves(vault), salt: 'fp' };
        for (const leaf of scalars(input)) {
          expect(tieAction({ action: 'form_input', input: { value: placeholderOf(leaf.path) } }, ctx)).toEqual({ refs: [leaf.path] });
        }
        untouched();
      }),
    );
  });

  it('guards a literal the model wrote by every input value it equals: equality never passes unguarded', () => {
    fc.assert(
      fc.property(payload, (input) => {
        const vault = createSecretVault(input, undefined);
        const leaves = inputLeaves(vault);
        // A value that holds a name is the model writing a name: that is a reference, not a literal.
        for (const leaf of leaves.filter((l) => l.kind !== 'null' && l.value.trim() !== '' && placeholdersIn(l.value).length === 0)) {
          const literal = leaf.kind === 'number' ? Number(leaf.value) : leaf.kind === 'boolean' ? leaf.value === 'true' : leaf.value;
          const tied = tieAction({ action: 'form_input', input: { value: literal } }, { input: vault, leaves, salt: 'fp' });
          expect(tied.refs).toEqual([]);
          expect(tied.guard?.paths.map(pathId)).toContain(pathId(leaf.path));
        }
      }),
    );
  });

  it('never ties a boolean the model wrote, and guards it by every input value, the yes/no ones named first', () => {
    fc.assert(
      fc.property(payload, fc.boolean(), (input, value) => {
        const vault = createSecretVault(input, undefined);
        const leaves = inputLeaves(vault);
        const tied = tieAction({ action: 'form_input', input: { value } }, { input: vault, leaves, salt: 'fp' });
        expect(tied.refs).toEqual([]);
        const yesNo = leaves.filter((l) => l.kind === 'boolean' || /^(true|false|yes|no|y|n|on|off|checked|unchecked|0|1)$/i.test(l.value.trim())).map((l) => pathId(l.path));
        expect(new Set(tied.guard?.paths.map(pathId))).toEqual(new Set(leaves.map((l) => pathId(l.path))));
        expect(new Set((tied.guard?.from ?? tied.guard?.paths ?? []).map(pathId))).toEqual(new Set(yesNo.length > 0 ? yesNo : leaves.map((l) => pathId(l.path))));
      }),
    );
  });

  it('finds exactly the values that changed, by path, whatever the keys', () => {
    fc.assert(
      fc.property(payload, fc.nat(), scalar, (input, pick, replacement) => {
        const leaves = inputLeaves(createSecretVault(input, undefined));
        const digests = inputDigests(leaves, 'fp');
        expect(changedPaths(digests, leaves, 'fp')).toEqual([]);
        const target = leaves[pick % leaves.length];
        fc.pre(target !== undefined && `${typeof replacement}:${String(replacement)}` !== `${target.kind}:${target.value}`);
        const changed = withValueAt(input, target!.path, replacement);
        expect(changedPaths(digests, inputLeaves(createSecretVault(changed, undefined)), 'fp')).toEqual([target!.path]);
      }),
    );
  });

  it('stores an entry that reads back the same, with every path an array of keys', () => {
    fc.assert(
      fc.property(payload, (input) => {
        const vault = createSecretVault(input, undefined);
        const steps = [scalars(input).map((leaf) => ({ tool: 'form_input', toolsetName: 'browser', input: { value: placeholderOf(leaf.path) }, url: 'https://app.test/form' }))];
        const entry = buildEntry({ versionId: 'v', fingerprint: 'fp', toolType: 't', executionId: 'e', now: () => 0, input: vault, steps });
        const stored = JSON.parse(JSON.stringify(entry)) as unknown;
        expect(parseCacheEntry(stored)).toEqual(entry);
        untouched();
      }),
    );
  });

  it('reads any stored value without throwing: what is not an entry is none', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (raw) => {
        expect(parseCacheEntry(raw)).toBeUndefined();
      }),
    );
  });
});
