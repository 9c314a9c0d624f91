/**
 * The limits on what one session's pages make (docs/security.md#limits): the settings, what a
 * reached limit tells, and the console's byte budget shared by every tab of the session.
 */
import type { Logger } from '../telemetry/types.js';
import type { LimitReached, PageLimits } from './types.js';

/** The defaults, the constants these limits were before they were settings. */
export const DEFAULT_PAGE_LIMITS: PageLimits = { tabsMax: 10, consoleLineMaxChars: 2_000, consoleEntriesMax: 300, consoleBytesMax: 1024 ** 2 };

/**
 * Tells each limit once per `scope` (a tab's id, or the session): a page flooding its console
 * reaches the line limit thousands of times, and the log must not flood with it. Each first time
 * is a call of `onLimit` (the runner logs it and makes it the run's event), or without one a
 * process-log warning.
 */
export function createLimitReporter(logger: Logger, onLimit?: (reached: LimitReached) => void): (scope: string, reached: LimitReached) => void {
  const told = new Set<string>();
  return (scope, reached) => {
    const key = `${reached.limit}\u0000${scope}`;
    if (told.has(key)) return;
    told.add(key);
    if (onLimit) onLimit(reached);
    else logger.warn({ ...reached, scope }, `resource limit reached: ${reached.limit}`);
  };
}

/** The console bytes one session holds, across its tabs: a line is kept only while it fits. */
export interface ConsoleBudget {
  readonly maxBytes: number;
  /** Bytes held now. */
  readonly heldBytes: number;
  /** Takes `bytes` if they fit; false (nothing taken) when they do not. */
  take(bytes: number): boolean;
  /** Gives back what a line that was read or dropped held. */
  release(bytes: number): void;
}

export function createConsoleBudget(maxBytes: number): ConsoleBudget {
  let held = 0;
  return {
    maxBytes,
    get heldBytes() {
      return held;
    },
    take(bytes) {
      if (held + bytes > maxBytes) return false;
      held += bytes;
      return true;
    },
    release(bytes) {
      held = Math.max(0, held - bytes);
    },
  };
}
