import { setTimeout as delay } from 'node:timers/promises';

/**
 * Backoff arithmetic of the control-plane client: exponential backoff with full jitter and
 * `Retry-After` parsing. Pure functions, so their bounds can be tested without waiting.
 */

/**
 * Full jitter (a uniform draw in `[0, min(maxDelayMs, baseDelayMs · 2^attempt)]`): retries of
 * many workers hitting the same struggling API spread out instead of arriving in waves.
 * `attempt` counts from 0 for the first retry.
 */
export function backoffDelayMs(attempt: number, baseDelayMs: number, maxDelayMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * `Retry-After` as milliseconds: either delta-seconds or an HTTP date. `undefined` when absent
 * or unreadable (then plain backoff applies).
 */
export function parseRetryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch (error) {
    // Node rejects with its own AbortError: the caller gets the reason it aborted with.
    if (signal?.aborted) throw signal.reason as Error;
    throw error;
  }
}
