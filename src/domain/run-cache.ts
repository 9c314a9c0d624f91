/**
 * What of the run cache (docs/run-cache.md) both programs share: where a version's entry is kept
 * in the queue's Redis (the worker writes it, the local service clears it), and the report of a
 * run's use of it (`output.json`'s `cache`). The cache itself — its entry, its values, the
 * replay and its checks — lives in run-cache/.
 */

/** What `output.json` says of the cache (docs/run-cache.md#what-it-reports). */
export interface CacheReport {
  used: boolean;
  replayedSteps: number;
  modelSteps: number;
  /** The replayed step (1-based) at which the model took over; null when it did not. */
  fallbackAtStep: number | null;
  reason: string | null;
}

/** Where a version's cache is kept in the queue's Redis: shared by every worker, cleared through the local API. */
export function runCacheKey(queuePrefix: string, queueName: string, versionId: string): string {
  return `${queuePrefix}:${queueName}:run-cache:${versionId}`;
}
