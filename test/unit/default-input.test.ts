import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileSchema } from '../../src/domain/json-schema.js';
import { pathId, valueAt, withValueAt, type KeyPath } from '../../src/contract/key-path.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { findSecretMarks } from '../../src/domain/secret-marks.js';
import { createSecretVault, placeholder } from '../../src/domain/secrets.js';
import { markSecrets, revealDefaultInput, sealDefaultInput, secretPathsOf } from '../../src/local-service/default-input.js';

/**
 * A version's default input at rest (docs/secrets.md#at-rest), for any keys and any secrets:
 * stored masked with its secrets sealed, opened back whole, and a run's specification that
 * marks those secrets accepts what the version's accepted.
 */

const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
const key = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'a.b', '0', '1', '}}', 'U.S. total'));
const secretValue = fc.string({ minLength: 10, maxLength: 20 }).filter((s) => s.trim().length >= 10);

/** A payload of string leaves (some in arrays) and some of its leaves chosen as secrets. */
const input = fc
  .array(fc.tuple(fc.array(key, { minLength: 1, maxLength: 3 }), fc.oneof(secretValue, fc.integer(), fc.array(secretValue, { maxLength: 2 })), fc.boolean()), { minLength: 1, maxLength: 6 })
  .map((entries) => {
    let payload: unknown = {};
    for (const [path, value] of entries) {
      if (path.some((_, i) => i > 0 && valueAt(payload, path.slice(0, i)) !== undefined && (typeof valueAt(payload, path.slice(0, i)) !== 'object' || Array.isArray(valueAt(payload, path.slice(0, i)))))) continue;
      if (valueAt(payload, path) !== undefined) continue;
      payload = withValueAt(payload, path, value);
    }
    const secrets = entries.filter(([path, , secret]) => secret && valueAt(payload, path) !== undefined).map(([path]) => path);
    return { payload, secrets };
  });

const outermost = (paths: KeyPath[]) => paths.filter((p) => !paths.some((q) => q.length < p.length && q.every((k, i) => p[i] === k)));

describe('a default input at rest, for any payload and any secrets', () => {
  it('is stored masked, its sealed secrets hold no value in clear, and it opens back whole', () => {
    fc.assert(
      fc.property(input, ({ payload, secrets }) => {
        const stored = sealDefaultInput(payload, secrets, keys);
        const secretIds = new Set(outermost(secrets).map(pathId));
        for (const id of secretIds) {
          const path = JSON.parse(id) as KeyPath;
          expect(valueAt(stored.masked, path)).toBe(placeholder(path));
        }
        expect(new Set(secretPathsOf(stored.masked).map(pathId))).toEqual(secretIds);
        // The sealed text holds no secret in any of its forms (each secret here is 10 characters or more).
        for (const path of secrets) {
          const value = valueAt(payload, path);
          const vault = createSecretVault({ v: typeof value === 'string' ? value : JSON.stringify(value) }, { properties: { v: { writeOnly: true } } });
          if (typeof value === 'string') expect(vault.redact(stored.sealed ?? '')).toBe(stored.sealed ?? '');
        }
        expect(revealDefaultInput({ configuration: { inputPayload: stored.masked }, input_secrets: stored.sealed }, keys)).toEqual(payload);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('a specification marking those secrets accepts what it accepted, and marks them', () => {
    const schemas: Array<Record<string, unknown>> = [
      { type: 'object' },
      { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', additionalProperties: { $ref: '#/$defs/any' }, $defs: { any: {} } },
      { type: 'object', allOf: [{ maxProperties: 3 }], definitions: { x: {} }, properties: { a: { $ref: '#/definitions/x' } } },
    ];
    fc.assert(
      fc.property(input, fc.constantFrom(...schemas), ({ payload, secrets }, schema) => {
        const spec = markSecrets({ prompt: 'p', payloadSchema: schema }, secrets);
        const marked = spec.payloadSchema as Record<string, unknown>;
        expect(compileSchema(marked)(payload).ok).toBe(compileSchema(schema)(payload).ok);
        const found = new Set(findSecretMarks(payload, marked).map((m) => pathId(m.path)));
        for (const path of secrets) expect(found).toContain(pathId(path));
      }),
      { numRuns: 50 },
    );
  });

  it('without keys, a default input with a secret is refused naming it, and one without is kept', () => {
    expect(() => sealDefaultInput({ login: { password: 'pa55-word-x' } }, [['login', 'password']], undefined)).toThrow(expect.objectContaining({ status: 422, detail: [expect.objectContaining({ type: 'secret_needs_keys', msg: expect.stringMatching(/login.password.*PROFILE_KEYS/) })] }));
    expect(sealDefaultInput({ user: 'ann' }, [], undefined)).toEqual({ masked: { user: 'ann' }, sealed: null });
  });
});
