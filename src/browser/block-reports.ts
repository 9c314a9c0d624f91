/**
 * One `blocked` event per refusal. A URL the session checks (the navigate tool) may be refused
 * by a layer that reports it itself, or by the check alone: either way it is reported once.
 */
import type { BlockedRequest } from './types.js';

export interface BlockReports {
  report(event: BlockedRequest): void;
  /** Runs a URL check and reports a refusal once, whether or not the check reported it. */
  check(run: () => { ok: true } | { ok: false; reason: string }, what: Omit<BlockedRequest, 'reason'>): { ok: true } | { ok: false; reason: string };
}

export function blockReports(onBlocked: (event: BlockedRequest) => void): BlockReports {
  let checking = false;
  let reportedDuringCheck = false;
  return {
    report(event) {
      if (checking && event.layer === 'navigate-tool') reportedDuringCheck = true;
      onBlocked(event);
    },
    check(run, what) {
      checking = true;
      reportedDuringCheck = false;
      let verdict: ReturnType<typeof run>;
      try {
        verdict = run();
      } finally {
        checking = false;
      }
      if (!verdict.ok && !reportedDuringCheck) onBlocked({ ...what, reason: verdict.reason });
      return verdict;
    },
  };
}
