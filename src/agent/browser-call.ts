import { ExecutionError, errorFromSignal, isExecutionError } from '../contract/errors.js';

/**
 * Browser failures become `browser_error`, unless the run was aborted (then its reason wins).
 * The call gets the run's signal: on abort the browser ports stop what they were doing for it
 * (docs/action-spaces.md#cancellation) and reject at once, so a hung page cannot hold the run
 * past its deadline, and nothing of the call is left running in the browser.
 */
export async function browserCall<T>(fn: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    throwIfAborted(signal);
    const value = await fn(signal);
    // An action space answers a cancelled call as a failed action: the run is over all the same.
    throwIfAborted(signal);
    return value;
  } catch (error) {
    if (signal.aborted) throw errorFromSignal(signal);
    if (isExecutionError(error)) throw error;
    throw new ExecutionError('browser_error', `browser: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw errorFromSignal(signal);
}
