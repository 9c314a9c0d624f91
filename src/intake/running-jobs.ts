import { once } from 'node:events';

/**
 * The executions this worker runs now, by job id (the producer makes it the execution id; the
 * intake does not rely on it). Each has the controller that stops it; the registry says when
 * none is left, for the daemon's drain.
 */

export interface RunningJob {
  readonly executionId: string;
  readonly controller: AbortController;
}

export interface RunningJobs {
  readonly size: number;
  /** Starts tracking `jobId`; its run's signal is the job's controller combined with `jobSignal` (BullMQ's own). */
  add(jobId: string, executionId: string, jobSignal?: AbortSignal): { job: RunningJob; signal: AbortSignal };
  /** Stops tracking `jobId`; the last one to go makes the worker idle. */
  delete(jobId: string): void;
  runsExecution(executionId: string): boolean;
  /** Aborts each execution not stopped yet with `reason`. */
  abortAll(reason: Error): void;
  /** True once none runs; false when `signal` fires first. */
  whenIdle(signal: AbortSignal): Promise<boolean>;
}

export function createRunningJobs(): RunningJobs {
  const jobs = new Map<string, RunningJob>();
  const idle = new EventTarget();
  return {
    get size() {
      return jobs.size;
    },
    add(jobId, executionId, jobSignal) {
      const job = { executionId, controller: new AbortController() };
      jobs.set(jobId, job);
      return { job, signal: jobSignal ? AbortSignal.any([job.controller.signal, jobSignal]) : job.controller.signal };
    },
    delete(jobId) {
      if (jobs.delete(jobId) && jobs.size === 0) idle.dispatchEvent(new Event('idle'));
    },
    runsExecution: (executionId) => [...jobs.values()].some((job) => job.executionId === executionId),
    abortAll(reason) {
      for (const { controller } of jobs.values()) if (!controller.signal.aborted) controller.abort(reason);
    },
    async whenIdle(signal) {
      if (jobs.size === 0) return true;
      try {
        await once(idle, 'idle', { signal });
        return true;
      } catch (error) {
        if (!signal.aborted) throw error;
        // The last one may have ended in the same turn as the signal fired.
        return jobs.size === 0;
      }
    },
  };
}
