import { ExecutionError, errorFromSignal, isExecutionError } from '../domain/errors.js';

/**
 * Browser failures become `browser_error`, unless the run was aborted (then its reason wins).
 * An abort also ends the wait: a hung page must not hold the run past its deadline. What the
 * browser was still doing is cleaned up when the runner closes the session, right after.
 */
export async function browserCall<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    return await untilAborted(fn(), signal);
  } catch (error) {
    if (signal.aborted) throw errorFromSignal(signal);
    if (isExecutionError(error)) throw error;
    throw new ExecutionError('browser_error', `browser: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(errorFromSignal(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(errorFromSignal(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
