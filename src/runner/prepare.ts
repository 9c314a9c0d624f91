import path from 'node:path';
import { ExecutionError, errorFromSignal, toExecutionError } from '../contract/errors.js';
import { findInputFiles, type InputFile } from '../domain/input-files.js';
import type { SchemaValidator } from '../domain/json-schema.js';
import { sharedSchemaChecker, type CheckOutcome } from '../domain/schema-check.js';
import type { SecretMark } from '../domain/secret-marks.js';
import { createSecretVault } from '../domain/secrets.js';
import { parseSpecification } from '../domain/specification.js';
import type { ActionSpaceChoice } from '../toolset/types.js';
import type { ExecutionContext } from './execution.js';
import { stageInputFiles } from './input-files.js';
import { RunProfile } from './profile.js';
import { resolveJob } from './resolve.js';
import { depthProblem } from '../contract/json-bounds.js';
import type { Specification } from '../contract/specification.js';

/** What the browser phase needs, checked before `started`. */
export interface Prepared {
  spec: Specification;
  startUrl: string;
  modelId: string;
  /** The version the run cache is kept for; absent when unknown. */
  versionId?: string;
  choice: ActionSpaceChoice;
  validateOutput?: SchemaValidator;
  /** Fetched before `started` (docs/files-and-codes.md); offered to the pages' file inputs. */
  inputFiles: InputFile[];
  /** The specification's browser profile, loaded (docs/profiles.md). */
  profile?: RunProfile;
}

export type PrepareResult = { ok: true; value: Prepared } | { ok: false; error: ExecutionError; profile?: RunProfile };

/**
 * The prepare phase: resolve the job, validate the specification and the input, load the
 * profile, stage the input files. Everything here may fail without a browser (a bad
 * specification or input); a failure is emitted as an `error` event of phase `validate`, unless
 * the run was aborted.
 */
export async function prepare(ctx: ExecutionContext): Promise<PrepareResult> {
  const { deps, job, events, outerSignal: signal } = ctx;
  let profile: RunProfile | undefined;
  try {
    const resolved = await resolveJob(job, deps.controlPlane, signal);
    const spec = parseSpecification(resolved.rawSpecification);
    const startUrl = spec.startUrl ?? `https://${spec.allowedDomains[0]!.replace(/^\*\./, '')}/`;
    deps.checkSpecification(spec, startUrl);
    // A recording replays the workflow it was made of: any other would act out that one's steps
    // (the demo's shop order) under another name. Refused before anything runs.
    const only = deps.playback?.onlyPrompt;
    if (only !== undefined && spec.prompt !== only) {
      throw new ExecutionError('model_error', `no model to run this workflow: this worker replays ${deps.playback!.recording} (${deps.playback!.reason}), the recording of one workflow only ("${only.length > 80 ? `${only.slice(0, 79)}…` : only}"); any other needs ANTHROPIC_API_KEY`);
    }
    if (spec.approvals?.length && !deps.human) throw new ExecutionError('invalid_specification', 'approvals need a person to answer, and this worker has nobody to ask (no Redis): run it on the daemon');
    if (spec.profile !== undefined) RunProfile.usable(deps.profiles, spec.profile);
    const modelId = spec.model ?? deps.settings.defaultModel;
    const chosen = deps.chooseActionSpace(modelId, spec.toolset);
    if (!chosen.ok) throw new ExecutionError('invalid_specification', `${chosen.field ?? 'toolset'}: ${chosen.reason}`);
    if (chosen.endOfLife) events.emit('model_deprecated', { model: modelId, endOfLife: chosen.endOfLife });
    const validateOutput = spec.outputSchema === undefined ? undefined : await outputValidator(spec.outputSchema);
    // Checked off the event loop, within a time budget (docs/secrets.md#bounds); the schema's
    // secret marks on the input come from the same check.
    const deep = depthProblem(resolved.inputPayload ?? null);
    if (deep) throw new ExecutionError('invalid_input', `the input payload is refused: ${deep}`);
    let marks: readonly SecretMark[] | undefined;
    if (spec.payloadSchema !== undefined) {
      const checked = await sharedSchemaChecker().check(spec.payloadSchema, resolved.inputPayload ?? null, { marks: true });
      if (checked.kind !== 'checked') throw checkFailure(checked, 'payloadSchema', 'the input payload');
      if (!checked.valid) throw new ExecutionError('invalid_input', `the input payload does not match the payload schema: ${checked.text}`);
      marks = checked.marks;
    }
    // Input files are shown to the model by name; their URLs and local paths never are.
    const files = findInputFiles(resolved.inputPayload, spec.payloadSchema);
    if (spec.profile !== undefined) profile = await RunProfile.load(deps.profiles, spec.profile, events, ctx.log, signal);
    // A value of a saved profile that a page shows is redacted like any secret.
    ctx.secrets.vault = createSecretVault(files.payload, spec.payloadSchema, [...deps.settings.secrets, ...(profile?.secrets() ?? [])], marks ? { marks } : {});
    const inputFiles = await stageInputFiles({ refs: files.files, deps, allowedDomains: spec.allowedDomains, dir: path.join(ctx.workDir, 'inputs'), events, signal });
    const versionId = resolved.workflowVersionId ?? job.workflowVersionId;
    return {
      ok: true,
      value: { spec, startUrl, modelId, choice: chosen.choice, inputFiles, ...(versionId !== undefined ? { versionId } : {}), ...(validateOutput ? { validateOutput } : {}), ...(profile ? { profile } : {}) },
    };
  } catch (error) {
    const withProfile = profile ? { profile } : {};
    if (signal.aborted) return { ok: false, error: errorFromSignal(signal), ...withProfile };
    const failed = toExecutionError(error);
    events.emit('error', { phase: 'validate', code: failed.code, message: failed.message });
    return { ok: false, error: failed, ...withProfile };
  }
}

/** The output schema's check, off the event loop like the input's; a schema that does not compile is refused now. */
async function outputValidator(schema: NonNullable<Specification['outputSchema']>): Promise<SchemaValidator> {
  const checker = sharedSchemaChecker();
  const compiled = await checker.compile(schema);
  if (!compiled.ok) throw new ExecutionError('invalid_specification', `outputSchema is not a valid JSON Schema: ${compiled.reason}`);
  return async (value) => {
    const checked = await checker.check(schema, value);
    if (checked.kind === 'checked') return checked.valid ? { ok: true } : { ok: false, errors: checked.text };
    return { ok: false, errors: `the output is refused: ${checked.reason}` };
  };
}

/** A check that did not come to a verdict, as the execution's error. */
function checkFailure(outcome: Exclude<CheckOutcome, { kind: 'checked' }>, field: string, what: string): ExecutionError {
  if (outcome.kind === 'invalid_schema') return new ExecutionError('invalid_specification', `${field} is not a valid JSON Schema: ${outcome.reason}`);
  if (outcome.kind === 'failed' && outcome.code === 'invalid_specification') return new ExecutionError('invalid_specification', `${field}: ${outcome.reason}`);
  if (outcome.kind === 'failed') return new ExecutionError('internal', `${what} could not be checked: ${outcome.reason}`);
  return new ExecutionError('invalid_input', `${what} is refused: ${outcome.reason}`);
}
