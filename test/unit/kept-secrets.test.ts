import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { sealDefaultInput } from '../../src/local-service/default-input.js';
import { HttpError } from '../../src/local-service/http-errors.js';
import { decidingSchema } from '../../src/local-service/kept-secrets.js';
import { validateInputPayload } from '../../src/local-service/validation.js';
import { resolveTrigger } from '../../src/local-service/version-triggers.js';

/**
 * A default input's secret kept by an edit is never checked against a schema that decides
 * differently from the one it was given under (docs/security.md#secrets-at-rest): for generated
 * stored values and generated guesses (a pattern, a const, an enum, a length…), the edit's answer
 * is the same whatever the stored value is; the real validator (the schema thread) checks.
 */

const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
const storedSchema = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', minLength: 1, writeOnly: true } } };
const secret = fc.stringMatching(/^[A-Za-z0-9!-]{1,12}$/);

/** The schema an edit sends: the stored one with a check of a guess added at the password, or elsewhere. */
const guessedSchema = fc
  .tuple(
    secret,
    fc.constantFrom('pattern', 'const', 'enum', 'maxLength', 'minLength', 'not-const', 'root-const', 'if-then', 'format', 'same', 'annotation'),
  )
  .map(([guess, how]) => {
    const password: Record<string, unknown> = { type: 'string', minLength: 1, writeOnly: true };
    const schema: Record<string, unknown> = { type: 'object', properties: { user: { type: 'string' }, password } };
    if (how === 'pattern') password.pattern = `^${guess.replace(/[^A-Za-z0-9]/g, '.')}`;
    if (how === 'const') password.const = guess;
    if (how === 'enum') password.enum = [guess, `${guess}x`];
    if (how === 'maxLength') password.maxLength = guess.length;
    if (how === 'minLength') password.minLength = guess.length;
    if (how === 'not-const') password.not = { const: guess };
    if (how === 'root-const') schema.const = { user: 'kofi', password: guess };
    if (how === 'if-then') Object.assign(schema, { if: { properties: { password: { const: guess } } }, then: { required: ['nobody'] } });
    if (how === 'format') password.format = 'email';
    if (how === 'annotation') Object.assign(password, { title: guess, description: 'changed', writeOnly: undefined });
    return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  });

/** The edit's answer: the new version's trigger (its sealed secrets left out, they differ by IV), or the refusal. */
async function edit(stored: string, schema: Record<string, unknown>, configuration: Record<string, unknown> | undefined): Promise<unknown> {
  const sealed = sealDefaultInput({ user: 'kofi', password: stored }, [['password']], keys);
  const base = {
    status: 'published' as const,
    trigger_type: 'manual' as const,
    schedule_expression: null,
    configuration: { inputPayload: sealed.masked },
    input_secrets: sealed.sealed,
    specification: { payloadSchema: storedSchema },
  };
  try {
    const body = { status: 'draft' as const, ...(configuration ? { configuration } : {}) };
    const trigger = await resolveTrigger(body, base, (payload, loc) => validateInputPayload(schema, payload, loc), { allowEverySecond: false, inputKeys: keys, payloadSchema: schema });
    return { ok: trigger.configuration, sealed: trigger.input_secrets !== null };
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, detail: error.detail };
    throw error;
  }
}

describe('an edit that keeps a default input’s secret', () => {
  it('answers the same whatever the stored value, for any guess put in the schema', async () => {
    await fc.assert(
      fc.asyncProperty(secret, secret, guessedSchema, fc.boolean(), async (one, other, schema, sendsConfiguration) => {
        const configuration = sendsConfiguration ? { inputPayload: { user: 'kofi', password: '{{password}}' } } : undefined;
        const first = await edit(one, schema, configuration);
        const second = await edit(other, schema, configuration);
        expect(second).toEqual(first);
        // The answer names no stored value (one long enough not to be part of its words by chance).
        if (one.length >= 8) expect(JSON.stringify(first)).not.toContain(one);
      }),
      { numRuns: 150 },
    );
  });

  it('a guess equal to the value, a guess that differs: the same refusal, naming the path', async () => {
    for (const make of [(g: string) => ({ pattern: `^${g}` }), (g: string) => ({ const: g }), (g: string) => ({ enum: [g] })]) {
      const schemaOf = (g: string) => ({ type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', minLength: 1, writeOnly: true, ...make(g) } } });
      const right = await edit('hunter2xyz', schemaOf('hunter2xyz'), { inputPayload: { user: 'kofi', password: '{{password}}' } });
      const wrong = await edit('hunter2xyz', schemaOf('zzzzzzzzzz'), { inputPayload: { user: 'kofi', password: '{{password}}' } });
      expect(right).toMatchObject({ status: 422, detail: [{ loc: ['body', 'configuration', 'inputPayload', 'password'], type: 'secret_schema_changed' }] });
      expect(wrong).toEqual(right);
    }
  });

  it('keeps the secret when the schema is unchanged, or changed only in what annotates', async () => {
    const annotated = JSON.parse(JSON.stringify(storedSchema)) as { properties: { password: Record<string, unknown> } };
    delete annotated.properties.password.writeOnly;
    annotated.properties.password.description = 'the password';
    for (const schema of [storedSchema, annotated]) {
      const kept = await edit('hunter2xyz', schema, { inputPayload: { user: 'ann', password: '{{password}}' } });
      expect(kept).toEqual({ ok: { inputPayload: { user: 'ann', password: '{{password}}' } }, sealed: true });
    }
  });
});

describe('decidingSchema', () => {
  it('is the same for the same schema written in any key order, with or without annotations, and differs when an assertion does', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('a', 'b', 'title', 'description', 'const'), fc.constantFrom('x', 'y')), fc.string(), (properties, title) => {
        const schema = { type: 'object', properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, { const: v }])) };
        const reordered = { title, properties: Object.fromEntries(Object.entries(schema.properties).reverse()), type: 'object' };
        expect(decidingSchema(reordered)).toBe(decidingSchema(schema));
        // A property named like an annotation is a property, not an annotation.
        if (Object.keys(properties).length > 0) {
          const [first] = Object.keys(properties);
          const changed = { ...schema, properties: { ...schema.properties, [first!]: { const: 'z' } } };
          expect(decidingSchema(changed)).not.toBe(decidingSchema(schema));
        }
      }),
    );
  });
});

describe('a validation error about a value', () => {
  it('states the schema’s side only: the value is in no message, whichever keyword refuses it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9]{8,16}$/), fc.constantFrom('pattern', 'const', 'enum', 'maxLength', 'format', 'not', 'root-const', 'type'), async (value, how) => {
        const password: Record<string, unknown> = { type: 'string' };
        const schema: Record<string, unknown> = { type: 'object', properties: { password } };
        if (how === 'pattern') password.pattern = '^#';
        if (how === 'const') password.const = 'other';
        if (how === 'enum') password.enum = ['other', 'another'];
        if (how === 'maxLength') password.maxLength = 2;
        if (how === 'format') password.format = 'email';
        if (how === 'not') password.not = { minLength: 1 };
        if (how === 'root-const') schema.const = { password: 'other' };
        if (how === 'type') password.type = 'integer';
        const refused = await validateInputPayload(schema, { password: value }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(HttpError);
        expect(JSON.stringify((refused as HttpError).detail)).not.toContain(value);
      }),
      { numRuns: 80 },
    );
  });
});
