import type { ProfileKeyring } from '../domain/profile-crypto.js';
import type { KeyPath } from '../domain/key-path.js';
import { findSecretMarks, type SecretMark } from '../domain/secret-marks.js';
import { createSecretVault } from '../domain/secrets.js';
import { camelCaseFields, type JsonSchema } from '../domain/specification.js';
import { keepShownSecrets, revealDefaultInput, sealDefaultInput, secretPathsOf, storedDefaultInput } from './default-input.js';
import { isObject, unprocessable, type ValidationIssue } from './http-errors.js';
import { parseScheduleExpression } from './schedule-expression.js';
import type { VersionTrigger, VersionView } from './store.js';

/**
 * A version's trigger fields as the API takes them (`status`, `triggerType`,
 * `scheduleExpression`, `configuration`, snake_case accepted) and gives them back
 * (`status`, `trigger_type`, `schedule_expression`, `configuration`, `next_run_at`). The rules
 * are in docs/api.md#triggers.
 */

/** Request properties, spread into the create and edit schemas (validation.ts, the OpenAPI document). */
export const triggerProperties = {
  status: {
    type: 'string',
    enum: ['published', 'draft'],
    description: 'Status of the new version: `published` (default) or `draft`. A draft is never executed; publish it with POST …/versions/{versionId}/publish.',
  },
  triggerType: {
    type: 'string',
    enum: ['manual', 'schedule'],
    description: '`manual` (default: executed by POST …/execute) or `schedule` (also executed on each tick of scheduleExpression while it is the current, published version).',
  },
  scheduleExpression: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: 200,
    description:
      'Cron expression of a `schedule` version: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), or an @ macro, optionally preceded by `TZ=Area/City ` (default UTC). At most one run a minute.',
  },
  configuration: {
    type: ['object', 'null'],
    description: "Free-form object kept with the version. `configuration.inputPayload` is the version's default input: scheduled runs use it, and so does an execute call without inputPayload.",
  },
} as const;

/** The same fields as a version answers them (the OpenAPI document's WorkflowVersion). */
export const triggerVersionProperties = {
  status: { type: 'string', enum: ['published', 'draft'], description: 'A draft is never executed.' },
  trigger_type: { type: 'string', enum: ['manual', 'schedule'] },
  schedule_expression: { type: ['string', 'null'], description: 'Cron expression of a `schedule` version, as given; null for `manual`.' },
  configuration: { type: 'object', description: 'As given (`{}` when none was); secret fields of `inputPayload` are shown as their placeholder.' },
  next_run_at: {
    type: ['string', 'null'],
    format: 'date-time',
    description: "When the workflow's schedule fires next: on the current version when it is published with a schedule, else null.",
  },
} as const;

const SNAKE_TO_CAMEL: Record<string, string> = { trigger_type: 'triggerType', schedule_expression: 'scheduleExpression' };

/** The trigger fields of `body` under their camelCase names; an explicit camelCase field wins. */
export const camelCaseTriggerFields = (body: Record<string, unknown>): Record<string, unknown> => camelCaseFields(body, SNAKE_TO_CAMEL);

export const TRIGGER_FIELDS = Object.keys(triggerProperties);

/**
 * The trigger of a new version: what the (validated) body gives, else what `base` (the current
 * version, on an edit) had, else a published manual version. A new version is published unless
 * the body asks for a draft. Throws 422 naming each faulty field.
 *
 * `checkInput(payload, loc)` validates a default input against the new version's payload schema
 * and answers the schema's secret marks on it. The default input is stored masked, its secrets
 * sealed (default-input.ts): those the schema marks, and those of the base's default input.
 */
export async function resolveTrigger(
  body: Record<string, unknown>,
  base: (VersionTrigger & { specification?: Record<string, unknown> }) | undefined,
  checkInput: (payload: unknown, loc: (string | number)[]) => Promise<readonly SecretMark[]>,
  opts: { allowEverySecond: boolean; inputKeys?: ProfileKeyring },
): Promise<VersionTrigger> {
  const triggerType = (body.triggerType as VersionTrigger['trigger_type'] | undefined) ?? base?.trigger_type ?? 'manual';
  const issues: ValidationIssue[] = [];
  let expression: string | null;
  if ('scheduleExpression' in body) expression = (body.scheduleExpression as string | null) ?? null;
  else expression = triggerType === 'schedule' ? (base?.schedule_expression ?? null) : null;

  if (triggerType === 'manual' && expression !== null) {
    issues.push({ loc: ['body', 'scheduleExpression'], msg: 'only a version with triggerType "schedule" has a schedule expression', type: 'schedule_unused' });
  }
  if (triggerType === 'schedule') {
    if (expression === null) issues.push({ loc: ['body', 'scheduleExpression'], msg: 'field required when triggerType is "schedule"', type: 'missing' });
    else {
      const parsed = parseScheduleExpression(expression, opts);
      if (!parsed.ok) issues.push({ loc: ['body', 'scheduleExpression'], msg: parsed.msg, type: parsed.type });
    }
  }
  const given = 'configuration' in body;
  let configuration = given ? ((body.configuration as Record<string, unknown> | null) ?? {}) : (base?.configuration ?? {});
  if (issues.length > 0) throw unprocessable(issues);

  const hasInput = storedDefaultInput({ configuration }).has;
  // The clear default input: the body's (a placeholder the base showed standing for its secret),
  // or the base's own, its secrets opened.
  const payload = !hasInput ? null : given ? keepShownSecrets(configuration.inputPayload, base, opts.inputKeys) : revealDefaultInput(base!, opts.inputKeys);
  // A default input, or the input a scheduled run would get (null), must pass the payload
  // schema now: a schedule whose every run would be refused is refused when it is saved.
  let inputSecrets: string | null = null;
  if (hasInput || triggerType === 'schedule') {
    const marks = await checkInput(payload, ['body', 'configuration', 'inputPayload']);
    if (hasInput) {
      const carried = base ? carriedSecretPaths(base) : [];
      const stored = sealDefaultInput(payload, [...marks.map((m) => m.path), ...carried], opts.inputKeys);
      configuration = { ...configuration, inputPayload: stored.masked };
      inputSecrets = stored.sealed;
    }
  }
  return { status: (body.status as VersionTrigger['status'] | undefined) ?? 'published', trigger_type: triggerType, schedule_expression: expression, configuration, input_secrets: inputSecrets };
}

/** Where the base's default input has secrets: its placeholders; for a version stored before secrets were kept apart, its schema's marks. */
function carriedSecretPaths(base: VersionTrigger & { specification?: Record<string, unknown> }): KeyPath[] {
  const stored = storedDefaultInput(base);
  if (!stored.has) return [];
  if ('input_secrets' in base) return secretPathsOf(stored.masked);
  const schema = base.specification?.payloadSchema as JsonSchema | undefined;
  return schema === undefined ? [] : findSecretMarks(stored.masked, schema).map((m) => m.path);
}

/**
 * A version as answered: its default input as stored (secrets as placeholders), without the
 * sealed secrets, and when it runs next. A version stored before secrets were kept apart holds
 * its default input in clear: it is masked here under the version's payload schema.
 */
export function presentVersion<V extends VersionView>(version: V, nextRunAt: string | null): Omit<V, 'input_secrets'> & { next_run_at: string | null } {
  const { input_secrets: _sealed, ...shown } = version;
  const { configuration } = version;
  if ('input_secrets' in version || !isObject(configuration) || !('inputPayload' in configuration)) return { ...shown, next_run_at: nextRunAt };
  let inputPayload: unknown;
  try {
    inputPayload = createSecretVault(configuration.inputPayload, version.specification.payloadSchema as JsonSchema | undefined).maskedPayload;
  } catch {
    // A secret that cannot be read (a malformed one-time-code seed) is not shown at all.
    inputPayload = '[REDACTED]';
  }
  return { ...shown, configuration: { ...configuration, inputPayload }, next_run_at: nextRunAt };
}
