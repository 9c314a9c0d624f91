/**
 * How a browser call stops when its run's signal fires (docs/action-spaces.md#cancellation).
 * Playwright's and CDP's calls take no signal; each call site therefore names what stops the
 * browser's work for it (terminate the page's script, stop the load, release what it pressed),
 * and the call rejects with the signal's reason at once instead of waiting for the browser.
 */
import type { CDPSession } from 'playwright-core';

/**
 * Runs `work`. When `signal` fires before it settles, `cancel` is run (it stops what the browser
 * is doing for the call; it must not throw) and the returned promise rejects with the signal's
 * reason; `work`'s own outcome is then dropped (it fails or ends once cancelled).
 */
export function cancellable<T>(signal: AbortSignal, work: () => Promise<T>, cancel?: () => void): Promise<T> {
  if (signal.aborted) return Promise.reject(reasonOf(signal));
  const running = work();
  // Written by hand: Node's helpers (events.once, timers/promises) reject on abort but cannot
  // run the browser-side cancel or drop the call's later outcome.
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      running.catch(() => undefined);
      cancel?.();
      reject(reasonOf(signal));
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
 * Waits for `work` (which cannot be stopped and ends on its own: a bounded wait of Playwright's)
 * or for the signal, whichever comes first; resolves undefined on abort. For waits whose end
 * nobody needs once the run stops (settling).
 */
export async function settledOrAborted<T>(signal: AbortSignal, work: Promise<T>): Promise<T | undefined> {
  // Started already: a failure after the abort (or with the signal aborted before) is nobody's.
  work.catch(() => undefined);
  return cancellable(signal, () => work).catch((error: unknown) => {
    if (signal.aborted) return undefined;
    throw error;
  });
}

/**
 * Stops the script running in the page's renderer (the page's own, or the worker's evaluation
 * waiting behind it), so that its main thread is free again. With nothing running, Chromium ends
 * the next script instead: only used when the run stops, just before its session closes.
 */
export function terminateScripts(cdp: () => Promise<CDPSession>): () => void {
  return () => void cdp().then((client) => client.send('Runtime.terminateExecution')).catch(() => undefined);
}

function reasonOf(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}
