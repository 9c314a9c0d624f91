import { abortReason } from '../contract/errors.js';

/**
 * One AbortSignal per execution: the caller's (job lock lost, shutdown) combined with the
 * run's own deadline and with a browser crash. The reason says which, as an ExecutionError.
 */
export interface ExecutionSignal {
  readonly signal: AbortSignal;
  /** Aborts the run now with a reason (e.g. the browser died). First reason wins. */
  abort(reason: Error): void;
  /**
   * Stops the deadline's clock until the returned function is called: time spent waiting for a
   * person does not count against `timeoutMs` (docs/human-in-the-loop.md#timeouts).
   */
  pause(): () => void;
  /** Clears the deadline timer. */
  dispose(): void;
}

export function createExecutionSignal(outer: AbortSignal, timeoutMs: number): ExecutionSignal {
  const local = new AbortController();
  const expire = () => local.abort(abortReason('timeout', `the execution exceeded its time limit of ${timeoutMs} ms`));
  let left = timeoutMs;
  let armedAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let disposed = false;
  const arm = () => {
    armedAt = Date.now();
    timer = setTimeout(expire, left);
    timer.unref?.();
  };
  arm();
  const signal = AbortSignal.any([outer, local.signal]);
  return {
    signal,
    abort: (reason) => {
      if (!local.signal.aborted) local.abort(reason);
    },
    pause: () => {
      if (timer === undefined) return () => undefined;
      clearTimeout(timer);
      timer = undefined;
      left = Math.max(0, left - (Date.now() - armedAt));
      let resumed = false;
      return () => {
        if (resumed || disposed || local.signal.aborted) return;
        resumed = true;
        arm();
      };
    },
    dispose: () => {
      disposed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
