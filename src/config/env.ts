import { z } from 'zod';

/**
 * Reading settings from the environment (docs/configuration.md): the field types every program's
 * schema is made of, and one parse that names every bad variable at once, never repeating a
 * credential. The worker's schema is `schema.ts`; `execution-worker serve`'s is `serve.ts`.
 */

/** `true`, `false`, `1`, `0`, `yes`, `no`; empty is false (before a default applies). */
export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A whole number from `min` to `max`, written as digits only. */
export const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** A URL with one of `protocols` (`http:`…). */
export const url = (protocols: readonly string[]) =>
  z
    .string()
    .trim()
    .refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);

/** A string; empty is unset. */
export const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** A URL with one of `protocols`; empty is unset. */
export const optionalUrl = (protocols: readonly string[]) =>
  z
    .string()
    .trim()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(url(protocols).optional());

/** Query parameters of a URL whose value is a credential (`sentinelPassword`, `X-Amz-Signature`, `token`…). */
const CREDENTIAL_PARAMETER = /([?&][^=&#\s]*(?:pass|secret|token|key|signature|credential|auth)[^=&#\s]*=)[^&#\s]*/gi;

/**
 * A value as a configuration error may show it: a URL's user and password (`user:pass@`) and
 * credential-like query parameters become `***`. The value is malformed, so no URL parser can be
 * trusted to find them: everything between the scheme (if any) and the last `@` goes.
 */
function withoutCredentials(value: string): string {
  return value.replace(/^(\s*(?:[a-z][a-z0-9+.-]*:\/\/)?)[\s\S]*@/i, '$1***@').replace(CREDENTIAL_PARAMETER, '$1***');
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * The variables `schema` names, read from `env` and parsed; throws one ConfigError naming every
 * bad variable, its value (never one of `secret`'s, and without credentials) and what was
 * expected. An empty variable means "use the default", except those in `emptyIsValue`.
 */
/** A choice among fixed words reads as the words, not as zod's `expected one of "a"|"b"`. */
function plainMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_value' && issue.values.length > 0) return `must be one of ${issue.values.map(String).join(', ')}`;
  return issue.message;
}

export function parseEnvironment<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv,
  options: { secret: ReadonlySet<string>; emptyIsValue?: ReadonlySet<string> },
): z.output<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && (value.trim() !== '' || options.emptyIsValue?.has(key))) input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? '?');
    const value = env[name];
    const shown = value === undefined ? '(not set)' : options.secret.has(name) ? '(secret, not shown)' : JSON.stringify(withoutCredentials(value));
    return `  ${name}=${shown}: ${withoutCredentials(plainMessage(issue))}`;
  });
  throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
}
