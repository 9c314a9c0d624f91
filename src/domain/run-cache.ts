/**
 * What of the run cache (docs/run-cache.md) both programs share: where a version's entry is kept
 * in the queue's Redis (the worker writes it, the local service clears it), and the report of a
 * run's use of it (`output.json`'s `cache`). The cache itself — its entry, its values, the
 * replay and its checks — lives in run-cache/.
 */

import type { CacheReport } from '../contract/output.js';

/** The report of a run that did not use the cache (yet). */
export function emptyCacheReport(): CacheReport {
  return { used: false, replayedSteps: 0, modelSteps: 0, repairedSteps: 0, fallbackAtStep: null, reason: null, finalCheck: { ran: false, matches: null, reason: null } };
}

/** Where a version's cache is kept in the queue's Redis: shared by every worker, cleared through the local API. */
export function runCacheKey(queuePrefix: string, queueName: string, versionId: string): string {
  return `${queuePrefix}:${queueName}:run-cache:${versionId}`;
}
