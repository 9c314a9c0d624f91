import type { z } from 'zod';
import type { ProfileKeyring } from '../domain/profile-crypto.js';
import { MAX_REWRITE_PATHS, formatPath, leavesOf, outermostPaths, pathId, rewriteAt, valueAt, type KeyPath } from '../contract/key-path.js';
import { openValue, sealValue } from '../domain/sealed-values.js';
import { placeholder } from '../domain/secrets.js';
import { isObject, unprocessable } from './http-errors.js';
import { formatIssues } from '../contract/json.js';
import { sealedInputSecrets, type VersionTrigger } from '../contract/workflows.js';

/**
 * A version's default input (`configuration.inputPayload`) at rest (docs/secrets.md#at-rest).
 * Redis never holds its secret values in clear: the version keeps the input with each secret
 * replaced by its placeholder — which is also what the API shows — and the secret values apart,
 * sealed with the profiles' keys (`PROFILE_KEYS`, AES-256-GCM: sealed-values.ts). Running the
 * version with its default input opens them and puts them back.
 *
 * Which values are secret: those the version's payload schema marks, and every value that was
 * secret in the default input the version took over from the one before (an edit that gives no
 * configuration keeps it): a value once secret stays masked whatever a later schema says.
 *
 * Without `PROFILE_KEYS` a default input that holds a secret is refused, with a reason that says
 * so; one without secrets is kept as it is.
 */

const PURPOSE = 'default input';

type SealedSecrets = z.input<typeof sealedInputSecrets>;

/** What a version stores of a clear default input whose secrets are at `secretPaths`. */
export function sealDefaultInput(payload: unknown, secretPaths: readonly KeyPath[], keys: ProfileKeyring | undefined): { masked: unknown; sealed: string | null } {
  // A secret object is one secret: what it holds goes with it.
  const secrets: SealedSecrets['secrets'] = [];
  for (const { path } of outermostPaths(secretPaths.map((path) => ({ path })))) {
    const value = valueAt(payload, path);
    if (value === undefined || value === null) continue;
    secrets.push({ path, value });
  }
  if (secrets.length === 0) return { masked: payload, sealed: null };
  if (secrets.length > MAX_REWRITE_PATHS) {
    throw unprocessable([{ loc: ['body', 'configuration', 'inputPayload'], msg: `the default input holds ${secrets.length} secret values; at most ${MAX_REWRITE_PATHS} are kept`, type: 'too_many_secrets' }]);
  }
  if (!keys) {
    throw unprocessable([
      {
        loc: ['body', 'configuration', 'inputPayload'],
        msg: `the default input holds secret values (${secrets.map((s) => formatPath(s.path) || '(root)').join(', ')}), which are stored encrypted with PROFILE_KEYS, and this API has none: set PROFILE_KEYS, or give the secret values in each execute call`,
        type: 'secret_needs_keys',
      },
    ]);
  }
  const masked = rewriteAt(payload, secrets.map((s) => s.path), (path) => placeholder(path));
  return { masked, sealed: sealValue(PURPOSE, { secrets } satisfies SealedSecrets, keys) };
}

/** Where a stored (masked) default input has its secrets: the leaves that are their own placeholder. */
export function secretPathsOf(masked: unknown): KeyPath[] {
  return leavesOf(masked)
    .filter((leaf) => leaf.value === placeholder(leaf.path))
    .map((leaf) => leaf.path);
}

/** A version's default input as stored (placeholders in place of its secrets), or undefined when it has none. */
export function storedDefaultInput(version: Pick<VersionTrigger, 'configuration'>): { has: false } | { has: true; masked: unknown } {
  const { configuration } = version;
  return isObject(configuration) && Object.hasOwn(configuration, 'inputPayload') ? { has: true, masked: configuration.inputPayload } : { has: false };
}

/**
 * The clear default input of a stored version (null when it has none): its secrets opened and
 * put back. Throws 422 when they cannot be opened (no key, another key), saying why.
 */
export function revealDefaultInput(version: Pick<VersionTrigger, 'configuration' | 'input_secrets'>, keys: ProfileKeyring | undefined): unknown {
  const stored = storedDefaultInput(version);
  if (!stored.has) return null;
  if (typeof version.input_secrets !== 'string') return stored.masked;
  const opened = openValue(PURPOSE, version.input_secrets, keys);
  if (!opened.ok) {
    throw unprocessable([{ loc: ['configuration', 'inputPayload'], msg: `the version's default input has secret values that cannot be read: ${opened.reason}`, type: 'default_input_unreadable' }]);
  }
  const sealed = sealedInputSecrets.safeParse(opened.value);
  if (!sealed.success) {
    throw unprocessable([{ loc: ['configuration', 'inputPayload'], msg: `the version's default input has secret values that cannot be read: ${formatIssues(sealed.error.issues)}`, type: 'default_input_unreadable' }]);
  }
  const byPath = new Map(sealed.data.secrets.map((s) => [pathId(s.path), s.value]));
  return rewriteAt(stored.masked, sealed.data.secrets.map((s) => s.path), (path) => byPath.get(pathId(path)));
}

/**
 * What a run of the version with its default input gets: the clear input, and where its secrets
 * are. A secret of a default input stays one whatever the version's schema says now, so the run
 * is told too: `markSecrets` adds the marks to the specification the job carries.
 */
export function defaultRunInput(version: Pick<VersionTrigger, 'configuration' | 'input_secrets'>, keys: ProfileKeyring | undefined): { payload: unknown; secretPaths: KeyPath[] } {
  const stored = storedDefaultInput(version);
  return { payload: revealDefaultInput(version, keys), secretPaths: stored.has ? secretPathsOf(stored.masked) : [] };
}

/**
 * The specification with `"writeOnly": true` marks at `paths` added to its payload schema, in an
 * `allOf` entry of the schema's root (so that its own `$ref`s still resolve). A mark is an
 * annotation: what the schema accepts does not change. An array index is marked through
 * `prefixItems`, which the secret marks read under either draft (and draft 07 ignores).
 */
export function markSecrets(specification: Record<string, unknown>, paths: readonly KeyPath[]): Record<string, unknown> {
  if (paths.length === 0) return specification;
  const marks = { allOf: paths.map(markAt) };
  const schema = specification.payloadSchema;
  if (schema === false) return specification;
  const payloadSchema = isObject(schema) ? { ...schema, allOf: [...(Array.isArray(schema.allOf) ? schema.allOf : []), marks] } : marks;
  return { ...specification, payloadSchema };
}

function markAt(path: KeyPath): Record<string, unknown> {
  let schema: Record<string, unknown> = { writeOnly: true };
  for (const key of [...path].reverse()) {
    const properties = Object.create(null) as Record<string, unknown>;
    Object.defineProperty(properties, key, { value: schema, enumerable: true, writable: true, configurable: true });
    schema = /^(0|[1-9]\d*)$/.test(key) ? { properties, prefixItems: [...Array.from({ length: Number(key) }, () => ({})), schema] } : { properties };
  }
  return schema;
}

/** Where a default input given in an edit sends back a placeholder `base` showed for one of its secrets. */
export function shownSecretPaths(payload: unknown, base: Pick<VersionTrigger, 'configuration'> | undefined): KeyPath[] {
  const stored = base ? storedDefaultInput(base) : ({ has: false } as const);
  if (!stored.has) return [];
  return secretPathsOf(stored.masked).filter((path) => valueAt(payload, path) === placeholder(path));
}

/**
 * A default input given in an edit, with each placeholder the version before showed for one of
 * its secrets (`{{password}}` sent back as it was shown) standing for that secret: the stored
 * value is put back, so that an edit of the other fields keeps the secrets.
 */
export function keepShownSecrets(payload: unknown, base: Pick<VersionTrigger, 'configuration' | 'input_secrets'> | undefined, keys: ProfileKeyring | undefined): unknown {
  const shown = shownSecretPaths(payload, base);
  if (!base || shown.length === 0) return payload;
  const clear = revealDefaultInput(base, keys);
  return rewriteAt(payload, shown, (path) => valueAt(clear, path));
}
