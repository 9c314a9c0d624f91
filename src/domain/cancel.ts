/**
 * Running an operation under an `AbortSignal`, for every adapter whose vendor call takes no
 * signal (Playwright and CDP calls, ioredis commands, an S3 upload's `done()`): the caller gets
 * the signal's reason the moment it fires, and the operation is told to stop or, when it cannot
 * be, left to end on its own with its outcome dropped (docs/action-spaces.md#cancellation).
 *
 * Node's own helpers (`events.once`, `timers/promises`) reject on abort but wait for an event or
 * a timer, not for an arbitrary promise, and cannot run a stop step: hence these few lines.
 */

/**
 * Runs `work`. Rejects with the signal's reason at once when `signal` is already aborted (then
 * `work` never starts) or when it fires before `work` settles; in that case `cancel` runs first
 * (it stops what `work` is doing; it must not throw) and `work`'s later outcome is dropped.
 * Otherwise settles as `work` does. The listener is removed either way.
 */
export function cancellable<T>(signal: AbortSignal, work: () => Promise<T>, cancel?: () => void): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const running = work();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      // Dropped on purpose: the caller has its answer (the signal's reason); a failure of the
      // stopped work afterwards ("Execution was terminated", a closed connection) is nobody's.
      running.catch(() => undefined);
      cancel?.();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    running.then(
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

/**
 * Waits for `work` (already started, and ending on its own: a bounded wait nobody needs once the
 * run stops, such as settling) or for the signal, whichever comes first; undefined on abort,
 * after `cancel` (as in `cancellable`) when the signal fires during the wait.
 */
export async function settledOrAborted<T>(signal: AbortSignal, work: Promise<T>, cancel?: () => void): Promise<T | undefined> {
  // Dropped on purpose: with the signal fired (now or earlier) the wait's failure is nobody's,
  // and before that `cancellable` passes it on below.
  work.catch(() => undefined);
  return cancellable(signal, () => work, cancel).catch((error: unknown) => {
    if (signal.aborted) return undefined;
    throw error;
  });
}
