import type { Frame, Page } from 'playwright-core';
import { settledOrAborted } from './cancellable.js';

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
/** Where a document keeps its still-waits under way (a symbol: out of the page's own names). */
const WAITS_KEY = 'execution-worker-settle-waits';

/**
 * Installed with `context.addInitScript`. Runs before the page's scripts in every frame; keeps
 * its state out of the page's enumerable globals. It answers `lastChange()` (epoch ms of the
 * last DOM change), `leavingSince(t)` (a cross-document navigation the page started since t,
 * not cancelled or intercepted by a router), `requestsBusy(t, quiet)` (fetch and XHR requests,
 * and reads of a fetch answer's body, made since t and unanswered or answered less than `quiet`
 * ago), `timersDue(t, horizon)`, and `chooserSince(t)` / `popupSince(t)` (a file chooser or a new
 * tab or window the page asked for since t).
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
  // A new tab or window this document asked for (a link or form aimed at another target, a
  // modified or middle click, window.open with a URL): the browser announces it to the worker
  // a moment later, and settling waits for it.
  let popup;
  const baseTarget = () => { const base = document.querySelector('base[target]'); return base ? base.getAttribute('target') : null; };
  const otherTarget = (t) => !!t && !['_self', '_parent', '_top'].includes(t.toLowerCase());
  addEventListener('submit', (event) => {
    const target = (event.submitter && event.submitter.getAttribute('formtarget')) || event.target.getAttribute('target') || baseTarget();
    if (selfTarget(target)) leaving = { at: Date.now(), event, intercepted: () => false };
    else if (otherTarget(target)) popup = { at: Date.now(), event };
  }, true);
  const linkClick = (event) => {
    const link = event.target && event.target.closest ? event.target.closest('a[href], area[href]') : null;
    if (!link || link.hasAttribute('download')) return;
    const elsewhere = otherTarget(link.getAttribute('target') || baseTarget());
    if (elsewhere || event.button === 1 || event.ctrlKey || event.metaKey || event.shiftKey) popup = { at: Date.now(), event };
  };
  addEventListener('click', linkClick, true);
  addEventListener('auxclick', (event) => { if (event.button === 1) linkClick(event); }, true);
  if (typeof window.open === 'function') {
    const nativeOpen = window.open;
    window.open = function (...args) {
      const url = args[0] == null ? '' : String(args[0]);
      const opened = nativeOpen.apply(this, args);
      if (opened && url && url !== 'about:blank') popup = { at: Date.now() };
      return opened;
    };
  }
  if (window.navigation) {
    window.navigation.addEventListener('navigate', (event) => {
      if (event.destination.sameDocument) return;
      // A router that intercepts it keeps the document: navigation.transition then exists.
      leaving = { at: Date.now(), event, intercepted: () => window.navigation.transition !== null };
    });
  }
  // Requests the page's scripts make (fetch, XMLHttpRequest), known here the moment they are
  // made: the browser's network events reach the worker a little later.
  const requests = new Set();
  const track = () => {
    const request = { created: Date.now(), ended: 0 };
    requests.add(request);
    return () => { request.ended = request.ended || Date.now(); };
  };
  // A promise-returning function, tracked from its call until its promise settles.
  const tracked = (native) => function (...args) {
    const end = track();
    try {
      const result = native.apply(this, args);
      result.then(end, end);
      return result;
    } catch (error) { end(); throw error; }
  };
  if (typeof window.fetch === 'function') window.fetch = tracked(window.fetch);
  // Reading an answer's body takes as long as the body takes to arrive, and the network wait
  // stops at the headers of script requests (a stream may never end): a read is a request too.
  if (window.Response) {
    for (const name of ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text']) {
      if (typeof Response.prototype[name] === 'function') Response.prototype[name] = tracked(Response.prototype[name]);
    }
  }
  if (window.XMLHttpRequest) {
    const nativeSend = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
      const end = track();
      this.addEventListener('loadend', end, { once: true });
      try { return nativeSend.apply(this, args); } catch (error) { end(); throw error; }
    };
  }
  // A file chooser the page opened (a click on a file input, or a script's input.click()):
  // Chromium tells the worker a moment later, and settling waits for that.
  let chooserAt = 0;
  const isFileInput = (el) => !!el && el.tagName === 'INPUT' && String(el.type).toLowerCase() === 'file';
  addEventListener('click', (event) => {
    const target = event.target;
    const label = target && target.closest ? target.closest('label') : null;
    if (isFileInput(target) || (label && isFileInput(label.control))) chooserAt = Date.now();
  }, true);
  if (window.HTMLInputElement) {
    const nativeClick = HTMLInputElement.prototype.click;
    HTMLInputElement.prototype.click = function (...args) {
      if (isFileInput(this)) chooserAt = Date.now();
      return nativeClick.apply(this, args);
    };
    const nativePicker = HTMLInputElement.prototype.showPicker;
    if (nativePicker) HTMLInputElement.prototype.showPicker = function (...args) {
      if (isFileInput(this)) chooserAt = Date.now();
      return nativePicker.apply(this, args);
    };
  }
  const watch = () => new MutationObserver(() => { lastChange = Date.now(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  watch();
  Object.defineProperty(window, '${PROBE_KEY}', {
    enumerable: false,
    value: {
      lastChange: () => lastChange,
      chooserSince: (since) => chooserAt >= since,
      popupSince: (since) => !!popup && popup.at >= since && !(popup.event && popup.event.defaultPrevented),
      leavingSince: (since) => !!leaving && leaving.at >= since && !leaving.event.defaultPrevented && !leaving.intercepted(),
      requestsBusy: (since, quiet) => {
        const now = Date.now();
        let n = 0;
        for (const r of requests) {
          if (r.ended && now - r.ended > 60000) requests.delete(r);
          else if (r.created >= since && (!r.ended || now - r.ended < quiet)) n++;
        }
        return n;
      },
      timersDue: (since, horizon) => {
        let n = 0;
        for (const t of pending.values()) if (t.created >= since && t.due <= since + horizon) n++;
        return n;
      },
    },
  });
})();`;

/**
 * The wait inside the page, as source text: a function handed to page.evaluate would be
 * serialised after the TypeScript loader's transforms (tsx adds `__name(...)` helpers that do
 * not exist in the page), so the code the page runs is written out here, like the probe.
 * Resolves at the first animation frame where the page is still, or at the cap.
 */
const STILL_WAIT = `({ key, sinceMs, capMs, quietMs, horizonMs }) => new Promise((resolve) => {
  const probe = window[key];
  // The waits under way, each ended early by STOP_WAITS when the run stops.
  const waits = window[Symbol.for('${WAITS_KEY}')] || (window[Symbol.for('${WAITS_KEY}')] = new Set());
  let done = false;
  const start = Date.now();
  // Without the probe (a document it could not reach) the change clock starts now.
  let fallbackLast = start;
  const observer = probe ? undefined : new MutationObserver(() => { fallbackLast = Date.now(); });
  if (observer) observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const finish = () => {
    if (done) return;
    done = true;
    waits.delete(finish);
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
  waits.add(finish);
  const tick = () => {
    if (!done) still() ? finish() : requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  // Animation frames stop in hidden pages: the cap ends the wait regardless.
  setTimeout(finish, capMs);
})`;

/** Ends every still-wait under way in a document (STILL_WAIT): the run has stopped. */
const STOP_WAITS = `(window[Symbol.for('${WAITS_KEY}')] || new Set()).forEach((finish) => finish())`;

/** Errors that mean the document went away under the evaluation (a navigation, a closed tab). */
const DOCUMENT_GONE = /context was destroyed|Cannot find context|navigat|has been closed|Target closed|frame was detached/i;

/**
 * Resolves when the page (or one frame of it) is still after an input made at `sinceMs` (epoch ms), or at the
 * deadline ('chooser' when the page opened a file chooser meanwhile, 'popup' when it asked for
 * a new tab or window): at least one animation frame (a pending paint lands), no timer set since the input
 * due within the horizon, no navigation under way, no script request made since the input still
 * unanswered (or just answered), and no DOM change for DOM_QUIET_MS.
 * 'destroyed' when a navigation replaced the document meanwhile; 'failed' when the page could
 * not run the wait at all (the caller then falls back on the network and load state alone).
 * 'quiet' at once when the signal fires; the wait in the page is ended too (or, in a page too
 * busy to be asked, at its own timer: the cap).
 */
export async function pageStill(page: Page | Frame, sinceMs: number, deadline: number, signal: AbortSignal): Promise<'quiet' | 'chooser' | 'popup' | 'destroyed' | 'failed'> {
  const capMs = deadline - Date.now();
  if (capMs <= 0 || signal.aborted || ('isClosed' in page ? page.isClosed() : page.isDetached())) return 'quiet';
  const args = { key: PROBE_KEY, sinceMs, capMs, quietMs: DOM_QUIET_MS, horizonMs: TIMER_HORIZON_MS };
  const late = new Error('the page did not answer within the settle cap');
  const stopWaits = () => void page.evaluate(STOP_WAITS).catch(() => undefined);
  try {
    // The in-page timer ends the wait in a live document; a document being replaced may never
    // run it, so the wait is bounded out here too (the evaluation is dropped with its document).
    signal.addEventListener('abort', stopWaits, { once: true });
    const state = await settledOrAborted(signal, withinMs(capMs + 250, page.evaluate(`(${STILL_WAIT})(${JSON.stringify(args)})`), () => late));
    return state === 'chooser' || state === 'popup' ? state : 'quiet';
  } catch (error) {
    // No answer by the cap (a renderer starved on a loaded machine, or a document on its way
    // out): the wait is over either way, as it would be at the cap.
    if (error === late) return 'quiet';
    return DOCUMENT_GONE.test(String(error)) ? 'destroyed' : 'failed';
  } finally {
    signal.removeEventListener('abort', stopWaits);
  }
}

/**
 * Resolves or rejects like `work`, or rejects after `ms` with `late()`. For browser calls that
 * can wait on a document that never comes; what is left pending ends when its page or session
 * closes.
 */
export function withinMs<T>(ms: number, work: Promise<T>, late: () => Error = () => new Error(`no answer from the page within ${ms} ms`)): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), ms);
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
