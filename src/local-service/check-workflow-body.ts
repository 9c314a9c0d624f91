import { workflowCreate, type WorkflowCreate } from '../contract/workflows.js';
import { HttpError } from './http-errors.js';
import type { ValidationIssue } from '../contract/api-errors.js';
import { checkSchemaCompiles, normaliseWorkflowBody, requestValidatorCompiler } from './validation.js';

/**
 * A workflow body checked exactly as `POST /api/workflows` checks it (workflow-routes.ts): the
 * snake_case spellings read, the route's own zod schema (closed: an unknown field is refused,
 * naming it) through the route's own validator, then the payload and output schemas compiled.
 * `execution-worker run --spec FILE` checks its file with it (docs/operations.md#commands), so a
 * file the API would refuse is refused by the CLI with the same words.
 */

export type WorkflowBodyCheck = { ok: true; body: WorkflowCreate } | { ok: false; issues: ValidationIssue[] };

const validate = requestValidatorCompiler()({ schema: workflowCreate, httpPart: 'body', method: 'POST', url: '/api/workflows' });

export async function checkWorkflowBody(input: unknown): Promise<WorkflowBodyCheck> {
  try {
    // The route's preValidation renames in place: a copy, so the caller's value is left as read.
    const body = normaliseWorkflowBody(structuredClone(input));
    const result = validate(body) as { value?: WorkflowCreate; error?: unknown };
    if (result.error) throw result.error;
    const parsed = result.value!;
    await checkSchemaCompiles(parsed.payloadSchema, ['body', 'payloadSchema']);
    await checkSchemaCompiles(parsed.outputSchema, ['body', 'outputSchema']);
    return { ok: true, body: parsed };
  } catch (error) {
    if (error instanceof HttpError) return { ok: false, issues: error.detail };
    throw error;
  }
}
