import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPath, leavesOf, parsePath, pathId, valueAt, withValueAt, type KeyPath } from '../../src/contract/key-path.js';
import { findInputFiles } from '../../src/domain/input-files.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { JsonSchema } from '../../src/contract/json.js';

/**
 * Keys a caller chose, in the secret vault and the input files: a key with a dot, a bracket or a
 * prototype's name is masked, revealed and located as itself, and reaches no prototype.
 */

const secret = { type: 'string', writeOnly: true } as const;

describe('keys from outside in the secret vault', () => {
  it('masks and reveals a secret under a dotted key, apart from the nested path of the same text', () => {
    const schema = { type: 'object', properties: { 'login.password': secret, login: { type: 'object', properties: { password: { type: 'string' } } } } };
    const vault = createSecretVault({ 'login.password': 'dotted-Secret-1', login: { password: 'not-secret-at-all' } }, schema);
    expect(vault.maskedPayload).toEqual({ 'login.password': '{{["login.password"]}}', login: { password: 'not-secret-at-all' } });
    expect(vault.paths).toEqual(['["login.password"]']);
    expect(vault.reveal('{{["login.password"]}}|{{login.password}}')).toBe('dotted-Secret-1|{{login.password}}');
  });

  it('masks a secret under __proto__ and constructor as own keys, and no prototype changes', () => {
    const payload = JSON.parse('{"__proto__": {"polluted": "proto-Secret-1"}, "constructor": {"prototype": {"polluted": "ctor-Secret-2"}}}') as unknown;
    // JSON text: in an object literal `__proto__` would set the prototype instead of a key.
    const schema = JSON.parse(
      '{"type": "object", "properties": {"__proto__": {"type": "object", "properties": {"polluted": {"type": "string", "writeOnly": true}}}, "constructor": {"type": "object", "properties": {"prototype": {"type": "object", "properties": {"polluted": {"type": "string", "writeOnly": true}}}}}}}',
    ) as JsonSchema;
    const vault = createSecretVault(payload, schema);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(vault.maskedPayload)).toBe('{"__proto__":{"polluted":"{{__proto__.polluted}}"},"constructor":{"prototype":{"polluted":"{{constructor.prototype.polluted}}"}}}');
    expect(vault.reveal('{{__proto__.polluted}} {{constructor.prototype.polluted}}')).toBe('proto-Secret-1 ctor-Secret-2');
    expect(vault.redact('proto-Secret-1')).toBe('{{__proto__.polluted}}');
  });

  it('finds marks under prefixItems and dependentSchemas whatever $schema says', () => {
    const schema = {
      type: 'object',
      properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, secret] } },
      dependentSchemas: { user: { properties: { token: secret } } },
    };
    const vault = createSecretVault({ pair: ['ann', 'tuple-Secret-1'], user: 'ann', token: 'dependent-Secret-2' }, schema);
    expect(vault.paths.toSorted()).toEqual(['pair.1', 'token']);
    // Draft-07 spellings of the same, also without $schema.
    const draft7 = { type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, secret] } }, dependencies: { user: { properties: { token: secret } } } };
    expect(createSecretVault({ pair: ['ann', 'tuple-Secret-1'], user: 'ann', token: 'dependent-Secret-2' }, draft7).paths.toSorted()).toEqual(['pair.1', 'token']);
  });
});

describe('keys from outside in input files', () => {
  it('names a file under a dotted key by its own path and shows it renamed there', () => {
    const found = findInputFiles({ 'a.b': { $file: 'https://files.test/x/one.pdf' }, a: { b: { $file: 'https://files.test/x/two.pdf' } } }, undefined);
    expect(found.files.map((f) => f.payloadPath).toSorted()).toEqual(['["a.b"]', 'a.b']);
    expect(found.payload).toEqual({ 'a.b': { $file: 'one.pdf' }, a: { b: { $file: 'two.pdf' } } });
  });
});

/** Keys as outsiders write them: anything, with the dangerous and confusing ones often. */
const key = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '', '.', 'a.b', '[0]', '"', '\\', '}}', '{{a}}', 'U.S. total'),
);
/** Secret values: long enough to be told apart from the rest of the payload (they are recognised from 8 characters on). */
const secretValue = fc.string({ minLength: 10, maxLength: 24 }).filter((s) => s.trim().length >= 10);
/** A payload object of depth ≤ 3 with string leaves, and a schema that marks some leaves secret. */
const marked = fc
  .array(fc.tuple(fc.array(key, { minLength: 1, maxLength: 3 }), secretValue, fc.boolean()), { minLength: 1, maxLength: 6 })
  .map((entries) => {
    let payload: unknown = {};
    for (const [path, value] of entries) {
      // A later path may run through an earlier leaf: keep only paths whose containers are objects.
      if (path.some((_, i) => i > 0 && valueAt(payload, path.slice(0, i)) !== undefined && typeof valueAt(payload, path.slice(0, i)) !== 'object')) continue;
      if (valueAt(payload, path) !== undefined) continue;
      payload = withValueAt(payload, path, value);
    }
    const secrets = entries.filter(([path, , isSecret]) => isSecret && typeof valueAt(payload, path) === 'string').map(([path]) => path);
    let schema: Record<string, unknown> = { type: 'object' };
    for (const path of secrets) schema = schemaWith(schema, path) as Record<string, unknown>;
    return { payload, schema, secrets: dedupe(secrets) };
  });

function schemaWith(schema: unknown, path: KeyPath): unknown {
  if (path.length === 0) return { type: 'string', writeOnly: true };
  const node = (schema ?? { type: 'object' }) as Record<string, unknown>;
  const properties = Object.create(null) as Record<string, unknown>;
  Object.assign(properties, node.properties);
  const [head, ...rest] = path as [string, ...string[]];
  Object.defineProperty(properties, head, { value: schemaWith(Object.hasOwn(properties, head) ? properties[head] : undefined, rest), enumerable: true, writable: true, configurable: true });
  return { ...node, type: 'object', properties: { ...properties } };
}

function dedupe(paths: KeyPath[]): KeyPath[] {
  const seen = new Set<string>();
  return paths.filter((p) => !seen.has(JSON.stringify(p)) && seen.add(JSON.stringify(p)));
}

describe('the vault, for any payload and any marks', () => {
  it('masks every marked value, reveals each placeholder to its value, and redacts every value', () => {
    fc.assert(
      fc.property(marked, ({ payload, schema, secrets }) => {
        const before = Object.getOwnPropertyNames(Object.prototype).length;
        const vault = createSecretVault(payload, JSON.parse(JSON.stringify(schema)) as JsonSchema);
        expect(Object.getOwnPropertyNames(Object.prototype).length).toBe(before);
        // Every other value is as it was.
        for (const leaf of leavesOf(vault.maskedPayload)) {
          if (!secrets.some((path) => pathId(path) === pathId(leaf.path))) expect(leaf.value).toBe(valueAt(payload, leaf.path));
        }
        for (const path of secrets) {
          const value = valueAt(payload, path) as string;
          const placeholder = `{{${formatPath(path)}}}`;
          expect(valueAt(vault.maskedPayload, path)).toBe(placeholder);
          expect(vault.paths).toContain(formatPath(path));
          expect(vault.reveal(placeholder)).toBe(value);
          // A redacted text names the secret by its path, which is no secret (a value may be part of its own key's name).
          const redacted = vault.paths.reduce((text, name) => text.split(`{{${name}}}`).join('{{}}'), vault.redact(`[${value}]`));
          expect(redacted).not.toContain(value);
        }
        expect(vault.paths).toHaveLength(secrets.length);
      }),
      { numRuns: 300 },
    );
  });
});

describe('input files, for any keys', () => {
  it('names each file by the path of keys it sits at, and shows it renamed there', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.array(key, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5, selector: (p) => JSON.stringify(p) }), (paths) => {
        // Only paths that are no prefix of another: a file is a leaf.
        const leaves = paths.filter((p) => !paths.some((q) => q !== p && q.length > p.length && p.every((k, i) => q[i] === k)));
        // A key named `$file` makes its object a file itself.
        fc.pre(leaves.every((p) => !p.includes('$file')));
        let payload: unknown = {};
        leaves.forEach((p, i) => (payload = withValueAt(payload, p, { $file: `https://files.test/f/${i}.pdf` })));
        const found = findInputFiles(payload, undefined);
        expect(({} as Record<string, unknown>).$file).toBeUndefined();
        expect(found.files).toHaveLength(leaves.length);
        for (const file of found.files) {
          const path = parsePath(file.payloadPath)!;
          expect(valueAt(payload, path)).toEqual({ $file: file.url });
          expect(valueAt(found.payload, path)).toEqual({ $file: file.name });
        }
      }),
    );
  });
});
