import { abortReason } from '../domain/errors.js';

/**
 * One AbortSignal per execution: the caller's (job lock lost, shutdown) combined with the
 * run's own deadline and with a browser crash. The reason says which, as an ExecutionError.
 */
export interface ExecutionSignal {
  readonly signal: AbortSignal;
  /** Aborts the run now with a reason (e.g. the browser died). First reason wins. */
  abort(reason: Error): void;
  /** Clears the deadline timer. */
  dispose(): void;
}

export function createExecutionSignal(outer: AbortSignal, timeoutMs: number): ExecutionSignal {
  const local = new AbortController();
  const timer = setTimeout(() => local.abort(abortReason('timeout', `the execution exceeded its time limit of ${timeoutMs} ms`)), timeoutMs);
  timer.unref?.();
  const signal = AbortSignal.any([outer, local.signal]);
  return {
    signal,
    abort: (reason) => {
      if (!local.signal.aborted) local.abort(reason);
    },
    dispose: () => clearTimeout(timer),
  };
}
