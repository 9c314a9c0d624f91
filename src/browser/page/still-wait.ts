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

/**
 * How the wait ended: the page still (or a file chooser or a popup it asked for), and, when it
 * ended at the cap, what the page was still doing then (for the worker's log).
 */
export interface StillWaitEnd {
  end: 'quiet' | 'chooser' | 'popup';
  heldBy?: Busy;
}

/** What keeps a page from being still. */
export type Busy = 'leaving' | 'timers' | 'requests' | 'changing';

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
    /** What the page is still doing, or null when it is still. */
    const busy = (): Busy | null => {
      const now = Date.now();
      if (!probe) return now - fallbackLast >= quietMs ? null : 'changing';
      // A new document is coming: the wait ends when this one is gone (or at the cap).
      if (probe.leavingSince(sinceMs)) return 'leaving';
      if (probe.timersDue(sinceMs, horizonMs) > 0) return 'timers';
      // A request made since the input, and a moment after its answer for the page to show it.
      if (probe.requestsBusy(sinceMs, quietMs) > 0) return 'requests';
      const last = probe.lastChange();
      return last < sinceMs || now - last >= quietMs ? null : 'changing';
    };
    const finish = (heldBy: Busy | null) => {
      if (done) return;
      done = true;
      under.delete(stop);
      if (observer) observer.disconnect();
      const end = probe && probe.chooserSince(sinceMs) ? 'chooser' : probe && probe.popupSince(sinceMs) ? 'popup' : 'quiet';
      resolve(heldBy ? { end, heldBy } : { end });
    };
    const stop = () => finish(null);
    under.add(stop);
    const tick = () => {
      if (done) return;
      const held = busy();
      if (held && Date.now() - start < capMs) requestAnimationFrame(tick);
      else finish(held);
    };
    requestAnimationFrame(tick);
    // Animation frames stop in hidden pages: the cap ends the wait regardless.
    setTimeout(() => finish(busy()), capMs);
  });
}

/** Ends every still-wait under way in this document: the run has stopped. */
export function stopWaits(): void {
  waits().forEach((finish) => finish());
}
