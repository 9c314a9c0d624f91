import { parentPort } from 'node:worker_threads';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { compileRawSchema, describeSchemaErrors } from './json-schema.js';
import { findSecretMarks } from './secret-marks.js';
import type { CheckReply, CheckRequest } from './schema-check.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * The thread that applies payload and output schemas to values (docs/secrets.md#bounds): the
 * one place where a schema someone wrote meets a value someone sent, off the event loop of the
 * worker and of the local API, so that whatever the pair costs, their loops keep answering.
 * schema-check.ts sends the requests, times each one, and ends this thread when one overruns.
 */

/** Errors reported per check: a million-item array failing one keyword must not make a million-line answer. */
const MAX_ERRORS = 100;

const compiled = new Map<string, ValidateFunction>();

function validatorFor(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = compileRawSchema(schema);
    // A few schemas are in use at a time; each compile generates code, so keep a handful.
    if (compiled.size >= 100) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, validate);
  }
  return validate;
}

function answer(request: CheckRequest): CheckReply {
  let validate: ValidateFunction;
  try {
    validate = validatorFor(request.schema);
  } catch (error) {
    return { id: request.id, kind: 'invalid_schema', reason: error instanceof Error ? error.message : String(error) };
  }
  if (request.op === 'compile') return { id: request.id, kind: 'compiled' };
  const valid = validate(request.value) === true;
  const errors: ErrorObject[] = (validate.errors ?? []).slice(0, MAX_ERRORS).map(({ instancePath, schemaPath, keyword, params, message }) => ({
    instancePath,
    schemaPath,
    keyword,
    params,
    ...(message !== undefined ? { message } : {}),
  }));
  const text = valid ? '' : describeSchemaErrors(errors, request.value);
  const marks = request.marks ? findSecretMarks(request.value, request.schema) : undefined;
  return { id: request.id, kind: 'checked', valid, errors, text, ...(marks ? { marks } : {}) };
}

parentPort!.on('message', (request: CheckRequest) => {
  let reply: CheckReply;
  try {
    reply = answer(request);
  } catch (error) {
    // A schema that recurses past the stack, a `$ref` that names nothing: a reason, not a crash.
    reply = { id: request.id, kind: 'failed', reason: error instanceof Error ? error.message : String(error), ...(isCoded(error) ? { code: error.code } : {}) };
  }
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ kind: 'ready' });

function isCoded(error: unknown): error is { code: string } {
  return error !== null && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string';
}
