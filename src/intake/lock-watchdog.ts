import { abortReason } from '../contract/errors.js';
import type { Logger } from '../telemetry/types.js';
import type { RunningJob } from './running-jobs.js';

/**
 * Stops a run whose job lock this worker no longer holds (docs/queue-and-jobs.md#lost-executions).
 * BullMQ's own lock manager renews the locks and says how each renewal went; this watches what
 * it says, the way BullMQ keeps lock renewal apart from its worker:
 *
 * - a renewal refused (the lock was taken away): stop the run, unless Redis has no trace of the
 *   job at all (restarted without its data), when no other worker can ever take it and stopping
 *   would only lose the run: it finishes without a lock;
 * - no renewal for longer than the lock lives (Redis unreachable): another worker may by now see
 *   the job as stalled, so this one stops instead of racing it.
 */

export interface LockWatchdogOptions {
  lockDurationMs: number;
  logger: Logger;
  /** Whether Redis still holds the job; true when it cannot tell (unreachable): then the run stops. */
  jobExists(jobId: string): Promise<boolean>;
  /** Time source, for tests. */
  nowMs?: () => number;
}

export interface LockWatchdog {
  /** Watches `job`'s lock from now on. */
  track(jobId: string, job: RunningJob): void;
  untrack(jobId: string): void;
  /** BullMQ renewed these jobs' locks. */
  renewed(jobIds: readonly string[]): void;
  /** BullMQ could not renew this job's lock. */
  renewalFailed(jobId: string): Promise<void>;
  /** Stops each run whose lock has gone unrenewed for longer than it lives. */
  check(): void;
  /** Starts checking on its own, a few times per lock duration. */
  start(): void;
  close(): void;
}

interface Watched {
  job: RunningJob;
  lastRenewedMs: number;
  /** Redis lost the job itself: the run goes on without a lock. */
  orphaned: boolean;
}

export function createLockWatchdog(options: LockWatchdogOptions): LockWatchdog {
  const { lockDurationMs, logger } = options;
  const now = options.nowMs ?? Date.now;
  const watched = new Map<string, Watched>();
  let timer: NodeJS.Timeout | undefined;

  const stop = (jobId: string, why: string) => {
    const entry = watched.get(jobId);
    if (!entry || entry.job.controller.signal.aborted) return;
    logger.error({ executionId: entry.job.executionId, why }, 'job lock lost: stopping the run');
    entry.job.controller.abort(abortReason('worker_lost', `this worker lost the execution's job lock (${why})`));
  };

  const watchdog: LockWatchdog = {
    track(jobId, job) {
      watched.set(jobId, { job, lastRenewedMs: now(), orphaned: false });
    },
    untrack(jobId) {
      watched.delete(jobId);
    },
    renewed(jobIds) {
      for (const id of jobIds) {
        const entry = watched.get(id);
        if (entry) entry.lastRenewedMs = now();
      }
    },
    async renewalFailed(jobId) {
      const entry = watched.get(jobId);
      if (!entry || entry.orphaned || entry.job.controller.signal.aborted) return;
      if (!(await options.jobExists(jobId))) {
        entry.orphaned = true;
        logger.warn({ executionId: entry.job.executionId, jobId }, 'the queue no longer knows this job (Redis lost its data); finishing the run without a lock');
        return;
      }
      stop(jobId, 'the job lock was taken away');
    },
    check() {
      const at = now();
      for (const [id, entry] of watched) {
        const silentMs = at - entry.lastRenewedMs;
        if (!entry.orphaned && silentMs > lockDurationMs) stop(id, `the job lock was not renewed for ${silentMs} ms`);
      }
    },
    start() {
      timer ??= setInterval(() => watchdog.check(), Math.max(1_000, Math.floor(lockDurationMs / 4)));
      timer.unref();
    },
    close() {
      clearInterval(timer);
    },
  };
  return watchdog;
}
