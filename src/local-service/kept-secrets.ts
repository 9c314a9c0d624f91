import { formatPath, pathId, type KeyPath } from '../contract/key-path.js';
import { forEachApplied, LIST, ONE, TABLE } from '../domain/secret-marks.js';
import { unprocessable } from './http-errors.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * A secret of a version's default input that an edit keeps without its value (the placeholder
 * sent back as shown, or no configuration sent) is checked against the new version's payload
 * schema only when that schema decides exactly what the one it was given under decided
 * (docs/security.md#secrets-at-rest). Otherwise the check is a way to read the secret: a schema
 * of the caller's choosing (`"pattern": "^a"`, `"const": "hunter2"`) accepts or refuses the
 * stored value, and the answer tells which. So when the schema changed, the edit is refused
 * before anything applies it to the stored value, with the same answer whatever the value is,
 * and the caller sends the value again in clear.
 *
 * The whole schema is compared, not the part under the secret's path: what decides about a value
 * is also above it — an ancestor's `const`, `enum` or `uniqueItems`, an `anyOf` whose branch a
 * sibling field steers, an `if` on the secret with a `then` on a sibling — and a comparison of
 * the whole cannot be steered by rearranging the rest. Keywords that only annotate (`title`,
 * `description`, `writeOnly`, …) are left out of the comparison: they change no answer, and an
 * edit that drops a `writeOnly` mark keeps the secret (it stays masked: default-input.ts).
 */

/** Keywords no validator decides anything by (JSON Schema's annotations, and our secret mark). */
const ANNOTATIONS = new Set(['title', 'description', '$comment', 'examples', 'deprecated', 'readOnly', 'writeOnly', 'x-secret']);

/** Secrets named one by one in a refusal; the rest are counted. */
const MAX_NAMED = 20;

const ONE_SET = new Set(ONE);
const LIST_SET = new Set(LIST);
const TABLE_SET = new Set(TABLE);

/**
 * The part of a schema a validator decides by, as canonical JSON (keys sorted, annotations
 * dropped where they are keywords of a schema — a property named `title` is kept), or undefined
 * when it is too deep to read (then no two schemas are taken as the same).
 */
export function decidingSchema(schema: unknown): string | undefined {
  try {
    return JSON.stringify(schemaPart(schema));
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

function schemaPart(schema: unknown): unknown {
  if (!isRecord(schema)) return canonical(schema);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema).sort()) {
    if (ANNOTATIONS.has(key)) continue;
    const value = schema[key];
    let part: unknown;
    if (ONE_SET.has(key) || LIST_SET.has(key)) part = Array.isArray(value) ? value.map(schemaPart) : schemaPart(value);
    else if (TABLE_SET.has(key) && isRecord(value)) part = Object.fromEntries(Object.keys(value).sort().map((name) => [name, schemaPart(value[name])]));
    else part = canonical(value);
    Object.defineProperty(out, key, { value: part, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A JSON value with its objects' keys sorted. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) Object.defineProperty(out, key, { value: canonical(value[key]), enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * Throws 422 `secret_schema_changed`, naming each kept secret's path, when the payload schema
 * decides differently from the one the secrets were given under. Nothing in the answer depends
 * on the secrets' values: it is decided before they are read.
 */
export function assertKeptUnderSameSchema(kept: readonly KeyPath[], givenUnder: unknown, now: unknown): void {
  if (kept.length === 0) return;
  const before = decidingSchema(givenUnder ?? null);
  if (before !== undefined && before === decidingSchema(now ?? null)) return;
  const issues = kept.slice(0, MAX_NAMED).map((path) => ({
    loc: ['body', 'configuration', 'inputPayload', ...path],
    msg: `the payload schema changed since the secret value at ${formatPath(path) || '(root)'} was given, so it is not kept: send the value again in clear with the new schema`,
    type: 'secret_schema_changed',
  }));
  if (kept.length > MAX_NAMED) {
    issues.push({ loc: ['body', 'configuration', 'inputPayload'], msg: `and ${kept.length - MAX_NAMED} more secret values: send them again in clear with the new schema`, type: 'secret_schema_changed' });
  }
  throw unprocessable(issues);
}

/**
 * Throws 422 `secret_compared`, naming each kept secret and its array, when a kept secret sits in
 * an array (at any depth below it) to which the payload schema may apply `"uniqueItems": true`.
 *
 * Under an unchanged schema a kept secret is still compared with what the caller sends next to
 * it wherever a keyword compares two values of the input with each other: the caller puts a guess
 * beside the secret and the answer says whether they are equal. In JSON Schema only `uniqueItems`
 * does that (Ajv's `$data`, which would let `const`, `enum` or `minimum` read another value of the
 * input, stays off: json-schema.ts). Every other keyword tests one value against constants of the
 * schema (`const`, `enum`, `pattern`, `format`, bounds) or counts and names what is there
 * (`required`, `dependentRequired`, `minItems`, `propertyNames`): under the schema the secret was
 * given under, the caller learns at most how the schema's own tests judge it, never whether it
 * equals a value they chose. So the rule is on the one comparing keyword, read with the secret
 * walk (every branch counted, `$ref`s followed, `items`, `prefixItems`, `contains`, … alike): it
 * is decided from the schema and where the placeholders are, before any secret is opened, and
 * answers the same whatever the secret and the other items are.
 *
 * `payload` is the default input as the caller sent it (placeholders in place); the rule applies
 * only then: an edit that sends no default input keeps the stored one whole, which passed under
 * this same schema and has no value of the caller's beside the secret.
 */
export function assertKeptUncompared(kept: readonly KeyPath[], payload: unknown, schema: unknown): void {
  if (kept.length === 0 || !isRecord(schema)) return;
  const unique = new Map<string, KeyPath>();
  forEachApplied(payload, schema as JsonSchema, (node, value, path) => {
    if (node.uniqueItems === true && Array.isArray(value)) unique.set(pathId(path), path);
  });
  if (unique.size === 0) return;
  const compared: { secret: KeyPath; array: KeyPath }[] = [];
  for (const secret of kept) {
    for (let depth = secret.length - 1; depth >= 0; depth--) {
      const array = unique.get(pathId(secret.slice(0, depth)));
      if (array) {
        compared.push({ secret, array });
        break;
      }
    }
  }
  if (compared.length === 0) return;
  const issues = compared.slice(0, MAX_NAMED).map(({ secret, array }) => ({
    loc: ['body', 'configuration', 'inputPayload', ...secret],
    msg: `the secret value at ${formatPath(secret) || '(root)'} is not kept: it is in the array at ${formatPath(array) || '(root)'}, whose items the payload schema requires to be unique (uniqueItems), and checking that would compare it with the values sent beside it; send the value again in clear`,
    type: 'secret_compared',
  }));
  if (compared.length > MAX_NAMED) {
    issues.push({ loc: ['body', 'configuration', 'inputPayload'], msg: `and ${compared.length - MAX_NAMED} more secret values in arrays with uniqueItems: send them again in clear`, type: 'secret_compared' });
  }
  throw unprocessable(issues);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
