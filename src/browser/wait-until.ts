/**
 * Waiting on state that changes under events: the owner of the state keeps a set of wakers and
 * calls them after each change; a waiter joins the set until its condition holds, its time is up
 * or its run is stopped.
 */

/**
 * Resolves true once `holds()` is true (checked now and each time a waker in `wakers` is
 * called), false after `ms` or once `signal` is aborted.
 */
export function waitUntil(holds: () => boolean, wakers: Set<() => void>, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (holds()) return Promise.resolve(true);
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const end = () => {
      clearTimeout(timer);
      wakers.delete(check);
      signal?.removeEventListener('abort', end);
      resolve(holds());
    };
    const check = () => {
      if (holds()) end();
    };
    const timer = setTimeout(end, Math.max(0, ms));
    wakers.add(check);
    signal?.addEventListener('abort', end, { once: true });
  });
}
