/**
 * What of the run cache (docs/run-cache.md) both programs share: where a version's entry is kept
 * in the queue's Redis (the worker writes it, the local service clears it), and the report of a
 * run's use of it (`output.json`'s `cache`). The cache itself — its entry, its values, the
 * replay and its checks — lives in run-cache/.
 */

/** What `output.json` says of the cache (docs/run-cache.md#what-it-reports). */
export interface CacheReport {
  used: boolean;
  /** Steps of the run replayed from the cache: cached steps, and the part of one before a stop or after a resume. */
  replayedSteps: number;
  /** Steps taken with the model: a repair's requests and a take-over's. */
  modelSteps: number;
  /** Cached steps the model redid one by one before the replay went on (docs/run-cache.md#repair-not-restart). */
  repairedSteps: number;
  /** The cached step (1-based) at which the model took the rest of the run over; null when it did not. */
  fallbackAtStep: number | null;
  reason: string | null;
  /** The check of the final page after a replay that ran every step: whether it ran, and its verdict. */
  finalCheck: { ran: boolean; matches: boolean | null; reason: string | null };
}

/** The report of a run that did not use the cache (yet). */
export function emptyCacheReport(): CacheReport {
  return { used: false, replayedSteps: 0, modelSteps: 0, repairedSteps: 0, fallbackAtStep: null, reason: null, finalCheck: { ran: false, matches: null, reason: null } };
}

/** Where a version's cache is kept in the queue's Redis: shared by every worker, cleared through the local API. */
export function runCacheKey(queuePrefix: string, queueName: string, versionId: string): string {
  return `${queuePrefix}:${queueName}:run-cache:${versionId}`;
}
