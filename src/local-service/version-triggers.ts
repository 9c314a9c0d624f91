import { formatIssues, type JsonSchema } from '../contract/json.js';
import { specification } from '../contract/specification.js';
import type { VersionTrigger, WorkflowCreate, WorkflowUpdate, WorkflowVersion } from '../contract/workflows.js';
import type { ProfileKeyring } from '../domain/profile-crypto.js';
import type { KeyPath } from '../contract/key-path.js';
import { findSecretMarks, type SecretMark } from '../domain/secret-marks.js';
import { createSecretVault } from '../domain/secrets.js';
import { keepShownSecrets, revealDefaultInput, sealDefaultInput, secretPathsOf, shownSecretPaths, storedDefaultInput } from './default-input.js';
import { assertKeptUncompared, assertKeptUnderSameSchema } from './kept-secrets.js';
import { isObject, unprocessable } from './http-errors.js';
import { parseScheduleExpression } from './schedule-expression.js';
import type { VersionView } from './store.js';
import type { ValidationIssue } from '../contract/api-errors.js';

/**
 * A version's trigger fields as the API takes them (`status`, `triggerType`,
 * `scheduleExpression`, `configuration`, snake_case accepted) and gives them back
 * (`status`, `trigger_type`, `schedule_expression`, `configuration`, `next_run_at`); their shapes
 * are in contract/workflows.ts, the rules in docs/api.md#triggers.
 */

/** The trigger fields of a create or edit body, as parsed. */
type TriggerBody = Pick<WorkflowCreate | WorkflowUpdate, 'status' | 'triggerType' | 'scheduleExpression' | 'configuration'>;

/**
 * The trigger of a new version: what the (validated) body gives, else what `base` (the current
 * version, on an edit) had, else a published manual version. A new version is published unless
 * the body asks for a draft. Throws 422 naming each faulty field.
 *
 * `checkInput(payload, loc)` validates a default input against the new version's payload schema
 * (`opts.payloadSchema`) and answers the schema's secret marks on it. The default input is stored masked, its secrets
 * sealed (default-input.ts): those the schema marks, and those of the base's default input.
 */
export async function resolveTrigger(
  body: TriggerBody,
  base: (VersionTrigger & { specification?: Record<string, unknown> }) | undefined,
  checkInput: (payload: unknown, loc: (string | number)[]) => Promise<readonly SecretMark[]>,
  opts: { allowEverySecond: boolean; inputKeys?: ProfileKeyring; payloadSchema?: unknown },
): Promise<VersionTrigger> {
  const triggerType = body.triggerType ?? base?.trigger_type ?? 'manual';
  const issues: ValidationIssue[] = [];
  let expression: string | null;
  if (body.scheduleExpression !== undefined) expression = body.scheduleExpression;
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
  const given = body.configuration !== undefined;
  let configuration = given ? (body.configuration ?? {}) : (base?.configuration ?? {});
  if (issues.length > 0) throw unprocessable(issues);

  const hasInput = storedDefaultInput({ configuration }).has;
  // The base's secrets this input keeps without their values: they are checked against the new
  // schema only when it decides as the one they were given under did (kept-secrets.ts).
  if (hasInput && base) {
    const kept = given ? shownSecretPaths(configuration.inputPayload, base) : carriedSecretPaths(base);
    assertKeptUnderSameSchema(kept, base.specification?.payloadSchema, opts.payloadSchema);
    // Nor where the schema compares them with the values sent beside them (uniqueItems).
    if (given) assertKeptUncompared(kept, configuration.inputPayload, opts.payloadSchema);
  }
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
  return { status: body.status ?? 'published', trigger_type: triggerType, schedule_expression: expression, configuration, input_secrets: inputSecrets };
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
 * A version as answered: its specification read through the contract's schema, its default input
 * as stored (secrets as placeholders), without the sealed secrets, and when it runs next. A
 * version stored before secrets were kept apart holds its default input in clear: it is masked
 * here under the version's payload schema.
 */
export function presentVersion(version: VersionView, nextRunAt: string | null): WorkflowVersion {
  const { input_secrets: _sealed, ...shown } = version;
  const read = specification.safeParse(version.specification);
  // The API stores only specifications that pass; one that no longer does is no answer.
  if (!read.success) throw new Error(`version ${version.workflow_version_uuid} holds a specification that is no longer valid: ${formatIssues(read.error.issues)}`);
  const answered = { ...shown, specification: read.data, next_run_at: nextRunAt };
  const { configuration } = version;
  if ('input_secrets' in version || !isObject(configuration) || !('inputPayload' in configuration)) return answered;
  let inputPayload: unknown;
  try {
    inputPayload = createSecretVault(configuration.inputPayload, read.data.payloadSchema).maskedPayload;
  } catch {
    // A secret that cannot be read (a malformed one-time-code seed) is not shown at all.
    inputPayload = '[REDACTED]';
  }
  return { ...answered, configuration: { ...configuration, inputPayload } };
}
