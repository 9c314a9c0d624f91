import type { Page } from 'playwright-core';

/**
 * When is a page still enough to capture? Waiting a fixed time after each action (as
 * reference loops do) wastes seconds on still pages and is too short on slow ones. Instead a
 * small probe, installed in every document before its own scripts, tells us two things the
 * page itself knows: when its DOM last changed, and which short timers are pending. After an
 * action the page is still when no timer the page set since the action is still due soon, the
 * DOM has not changed since the action (or not for a short window), and the page has not started
 * leaving for another document (a submitted form whose request has not even gone out yet). A
 * click that changes the page 300 ms later is therefore waited for; a click that changes
 * nothing is not.
 */

/** Timers due further ahead than this are not waited for (polling loops, idle timeouts). */
export const TIMER_HORIZON_MS = 1_000;
/** After the last DOM change, the page must stay unchanged this long. */
export const DOM_QUIET_MS = 50;

const PROBE_KEY = '__executionWorkerSettle';

/** What the probe answers inside the page. */
interface Probe {
  lastChange(): number;
  /** A cross-document navigation started by the page since `since`, not cancelled or intercepted. */
  leavingSince(since: number): boolean;
  timersDue(since: number, horizon: number): number;
}

/**
 * Installed with `context.addInitScript`. Runs before the page's scripts in every frame; keeps
 * its state out of the page's enumerable globals.
 */
export const SETTLE_PROBE_SCRIPT = `(() => {
  if (window.${PROBE_KEY}) return;
  const pending = new Map();
  const nativeSet = window.setTimeout.bind(window);
  const nativeClear = window.clearTimeout.bind(window);
  let lastChange = 0;
  window.setTimeout = function (handler, delay, ...args) {
    const due = Date.now() + (Number(delay) || 0);
    let id;
    const run = typeof handler === 'function'
      ? function (...a) { pending.delete(id); return handler.apply(this, a); }
      : handler;
    id = nativeSet(run, delay, ...args);
    if (typeof handler === 'function') pending.set(id, { created: Date.now(), due });
    return id;
  };
  window.clearTimeout = function (id) { pending.delete(id); return nativeClear(id); };
  // A navigation this document started (a form submitted, a link followed) replaces it later,
  // sometimes well after the page looked still: remember the last one and whether it goes on.
  let leaving;
  const selfTarget = (t) => !t || t === '_self';
  addEventListener('submit', (event) => {
    const target = (event.submitter && event.submitter.getAttribute('formtarget')) || event.target.getAttribute('target');
    if (selfTarget(target)) leaving = { at: Date.now(), event, intercepted: () => false };
  }, true);
  if (window.navigation) {
    window.navigation.addEventListener('navigate', (event) => {
      if (event.destination.sameDocument) return;
      // A router that intercepts it keeps the document: navigation.transition then exists.
      leaving = { at: Date.now(), event, intercepted: () => window.navigation.transition !== null };
    });
  }
  const watch = () => new MutationObserver(() => { lastChange = Date.now(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  watch();
  Object.defineProperty(window, '${PROBE_KEY}', {
    enumerable: false,
    value: {
      lastChange: () => lastChange,
      leavingSince: (since) => !!leaving && leaving.at >= since && !leaving.event.defaultPrevented && !leaving.intercepted(),
      timersDue: (since, horizon) => {
        let n = 0;
        for (const t of pending.values()) if (t.created >= since && t.due <= since + horizon) n++;
        return n;
      },
    },
  });
})();`;

/**
 * Resolves when the page is still after an input made at `sinceMs` (epoch ms), or at the
 * deadline: at least one animation frame (a pending paint lands), no timer set since the input
 * due within the horizon, and no DOM change for DOM_QUIET_MS. 'destroyed' when a navigation
 * replaced the document meanwhile.
 */
export async function pageStill(page: Page, sinceMs: number, deadline: number): Promise<'quiet' | 'destroyed'> {
  const capMs = deadline - Date.now();
  if (capMs <= 0 || page.isClosed()) return 'quiet';
  try {
    // The in-page timer ends the wait in a live document; a document being replaced may never
    // run it, so the wait is bounded out here too (the evaluation is dropped with its document).
    await withinMs(capMs + 250, page.evaluate(
      ({ key, sinceMs, capMs, quietMs, horizonMs }) =>
        new Promise<void>((resolve) => {
          const probe = (window as unknown as Record<string, Probe | undefined>)[key];
          const start = Date.now();
          // Without the probe (a document it could not reach) the change clock starts now.
          let fallbackLast = start;
          const observer = probe
            ? undefined
            : new MutationObserver(() => {
                fallbackLast = Date.now();
              });
          observer?.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
          const finish = () => {
            observer?.disconnect();
            resolve();
          };
          const still = () => {
            const now = Date.now();
            if (now - start >= capMs) return true;
            if (!probe) return now - fallbackLast >= quietMs;
            // A new document is coming: the wait ends when this one is gone (or at the cap).
            if (probe.leavingSince(sinceMs)) return false;
            if (probe.timersDue(sinceMs, horizonMs) > 0) return false;
            const last = probe.lastChange();
            return last < sinceMs || now - last >= quietMs;
          };
          const tick = () => (still() ? finish() : requestAnimationFrame(tick));
          requestAnimationFrame(tick);
          // Animation frames stop in hidden pages: the cap ends the wait regardless.
          setTimeout(finish, capMs);
        }),
      { key: PROBE_KEY, sinceMs, capMs, quietMs: DOM_QUIET_MS, horizonMs: TIMER_HORIZON_MS },
    ));
    return 'quiet';
  } catch {
    return 'destroyed';
  }
}

/**
 * Resolves or rejects like `work`, or rejects after `ms`. For browser calls that can wait on a
 * document that never comes; what is left pending ends when its page or session closes.
 */
export function withinMs<T>(ms: number, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer from the page within ${ms} ms`)), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
