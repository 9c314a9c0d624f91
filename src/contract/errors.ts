/**
 * The error taxonomy of an execution. Codes are the contract's (docs/api.md) and never change meaning;
 * match on `code`, never on message text.
 */
export const ERROR_CODES = [
  'invalid_job',
  'invalid_specification',
  'invalid_input',
  'timeout',
  'max_steps',
  'model_error',
  'browser_error',
  'agent_failed',
  'output_invalid',
  'worker_shutdown',
  'worker_lost',
  'human_timeout',
  'approval_denied',
  'budget_exceeded',
  'agent_stuck',
  'resource_limit',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class ExecutionError extends Error {
  override readonly name = 'ExecutionError';
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export function isExecutionError(error: unknown): error is ExecutionError {
  return error instanceof ExecutionError;
}

/** Maps anything thrown to an ExecutionError, keeping the original as `cause`. */
export function toExecutionError(error: unknown, fallback: ErrorCode = 'internal'): ExecutionError {
  if (isExecutionError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ExecutionError(fallback, message, { cause: error });
}

/** The reason an execution's AbortSignal fired: why the run was stopped from outside. */
export type AbortCause = 'timeout' | 'worker_shutdown' | 'worker_lost' | 'browser_error' | 'resource_limit';

/** Builds the reason carried by an aborting signal, so the runner can report the right code. */
export function abortReason(code: AbortCause, message: string): ExecutionError {
  return new ExecutionError(code, message);
}

/** The ExecutionError an aborted signal carries, or a generic one when aborted by a stranger. */
export function errorFromSignal(signal: AbortSignal): ExecutionError {
  const reason: unknown = signal.reason;
  if (isExecutionError(reason)) return reason;
  return new ExecutionError('internal', 'the execution was aborted', { cause: reason });
}
