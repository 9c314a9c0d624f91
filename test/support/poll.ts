/** Waiting in tests for what has no event to await: a process to appear or go, a log line. */

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** Polls `probe` every 50 ms until it returns a value; throws after `timeoutMs` (keep it generous). */
export async function waitFor<T>(probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await pause(50);
  }
}
