/**
 * The wait inside the page after an action (an entry: settle.ts evaluates it in the document's
 * own world, where the settle probe lives). Resolves at the first animation frame where the page
 * is still, or at the cap; see settle.ts for what "still" means.
 */
import { PROBE_KEY, WAITS_KEY } from './keys.js';
import type { SettleProbe } from './settle-probe.js';

export interface StillWaitArgs {
  sinceMs: number;
  capMs: number;
  quietMs: number;
  horizonMs: number;
}

export type StillWaitEnd = 'quiet' | 'chooser' | 'popup';

/** The waits under way in this document, each ended early by stopWaits() when the run stops. */
function waits(): Set<() => void> {
  const holder = window as unknown as Record<symbol, Set<() => void> | undefined>;
  const key = Symbol.for(WAITS_KEY);
  return (holder[key] ??= new Set());
}

export function stillWait({ sinceMs, capMs, quietMs, horizonMs }: StillWaitArgs): Promise<StillWaitEnd> {
  return new Promise((resolve) => {
    const probe = (window as unknown as Record<string, SettleProbe | undefined>)[PROBE_KEY];
    const under = waits();
    let done = false;
    const start = Date.now();
    // Without the probe (a document it could not reach) the change clock starts now.
    let fallbackLast = start;
    const observer = probe ? undefined : new MutationObserver(() => {
      fallbackLast = Date.now();
    });
    if (observer) observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const finish = () => {
      if (done) return;
      done = true;
      under.delete(finish);
      if (observer) observer.disconnect();
      if (probe && probe.chooserSince && probe.chooserSince(sinceMs)) resolve('chooser');
      else if (probe && probe.popupSince && probe.popupSince(sinceMs)) resolve('popup');
      else resolve('quiet');
    };
    const still = () => {
      const now = Date.now();
      if (now - start >= capMs) return true;
      if (!probe) return now - fallbackLast >= quietMs;
      // A new document is coming: the wait ends when this one is gone (or at the cap).
      if (probe.leavingSince(sinceMs)) return false;
      if (probe.timersDue(sinceMs, horizonMs) > 0) return false;
      // A request made since the input, and a moment after its answer for the page to show it.
      if (probe.requestsBusy(sinceMs, quietMs) > 0) return false;
      const last = probe.lastChange();
      return last < sinceMs || now - last >= quietMs;
    };
    under.add(finish);
    const tick = () => {
      if (!done) {
        if (still()) finish();
        else requestAnimationFrame(tick);
      }
    };
    requestAnimationFrame(tick);
    // Animation frames stop in hidden pages: the cap ends the wait regardless.
    setTimeout(finish, capMs);
  });
}

/** Ends every still-wait under way in this document: the run has stopped. */
export function stopWaits(): void {
  waits().forEach((finish) => finish());
}
