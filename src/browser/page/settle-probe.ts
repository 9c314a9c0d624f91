/**
 * The settle probe (an entry: installed with `context.addInitScript`, so it runs before the
 * page's scripts in every frame; settle.ts explains what it is for). It keeps its state out of
 * the page's enumerable globals and answers `lastChange()` (epoch ms of the last DOM change),
 * `leavingSince(t)` (a cross-document navigation the page started since t, not cancelled or
 * intercepted by a router), `requestsBusy(t, quiet)` (fetch and XHR requests, and reads of a
 * fetch answer's body, made since t and unanswered or answered less than `quiet` ago),
 * `timersDue(t, horizon)` (settle-timers.ts: timeouts and intervals an input at t waits for), and `chooserSince(t)` / `popupSince(t)` (a file chooser or a new tab
 * or window the page asked for since t).
 */
import { PROBE_KEY } from './keys.js';
import { watchTimers } from './settle-timers.js';

/** What the probe answers (still-wait.ts asks it). */
export interface SettleProbe {
  lastChange(): number;
  chooserSince(since: number): boolean;
  popupSince(since: number): boolean;
  leavingSince(since: number): boolean;
  requestsBusy(since: number, quiet: number): number;
  timersDue(since: number, horizon: number): number;
}

function install(): SettleProbe {
  let lastChange = 0;
  // Created first: the timers' ticks take its records to tell what each tick changed.
  const changes = new MutationObserver(() => {
    lastChange = Date.now();
  });
  changes.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  let work = 0;
  // When the browser last delivered an input event here (the worker's keys and clicks reach the
  // page a moment after it sends them).
  let inputAt = 0;
  for (const type of ['keydown', 'keyup', 'beforeinput', 'input', 'pointerdown', 'pointerup', 'mousedown', 'mouseup', 'click', 'wheel', 'paste', 'drop']) {
    addEventListener(type, (event) => {
      if (event.isTrusted) inputAt = Date.now();
    }, true);
  }
  const timers = watchTimers({
    inputAt: () => inputAt,
    takeChanges(mine) {
      const taken = changes.takeRecords().length > 0;
      if (taken && !mine) lastChange = Date.now();
      return taken;
    },
    work: () => work,
    started: () => void work++,
  });
  // A navigation this document started (a form submitted, a link followed) replaces it later,
  // sometimes well after the page looked still: remember the last one and whether it goes on.
  let leaving: { at: number; event: Event; intercepted: () => boolean } | undefined;
  const selfTarget = (t: string | null) => !t || t === '_self';
  // A new tab or window this document asked for (a link or form aimed at another target, a
  // modified or middle click, window.open with a URL): the browser announces it to the worker
  // a moment later, and settling waits for it.
  let popup: { at: number; event?: Event } | undefined;
  const baseTarget = () => {
    const base = document.querySelector('base[target]');
    return base ? base.getAttribute('target') : null;
  };
  const otherTarget = (t: string | null) => !!t && !['_self', '_parent', '_top'].includes(t.toLowerCase());
  addEventListener('submit', (event) => {
    const submitter = event.submitter;
    const form = event.target as Element;
    const target = (submitter && submitter.getAttribute('formtarget')) || form.getAttribute('target') || baseTarget();
    if (selfTarget(target)) leaving = { at: Date.now(), event, intercepted: () => false };
    else if (otherTarget(target)) popup = { at: Date.now(), event };
  }, true);
  const linkClick = (event: MouseEvent) => {
    const target = event.target as Partial<Element> | null;
    const link = target && target.closest ? target.closest('a[href], area[href]') : null;
    if (!link || link.hasAttribute('download')) return;
    const elsewhere = otherTarget(link.getAttribute('target') || baseTarget());
    if (elsewhere || event.button === 1 || event.ctrlKey || event.metaKey || event.shiftKey) popup = { at: Date.now(), event };
  };
  addEventListener('click', linkClick, true);
  addEventListener('auxclick', (event) => {
    if (event.button === 1) linkClick(event);
  }, true);
  if (typeof window.open === 'function') {
    const nativeOpen = window.open;
    window.open = function (this: Window, ...args: Parameters<typeof window.open>) {
      const url = args[0] == null ? '' : String(args[0]);
      const opened = nativeOpen.apply(this, args);
      if (opened && url && url !== 'about:blank') popup = { at: Date.now() };
      return opened;
    };
  }
  const navigation = (window as { navigation?: EventTarget & { transition: unknown } }).navigation;
  if (navigation) {
    navigation.addEventListener('navigate', (event) => {
      if ((event as Event & { destination: { sameDocument: boolean } }).destination.sameDocument) return;
      // A router that intercepts it keeps the document: navigation.transition then exists.
      leaving = { at: Date.now(), event, intercepted: () => navigation.transition !== null };
    });
  }
  // Requests the page's scripts make (fetch, XMLHttpRequest), known here the moment they are
  // made: the browser's network events reach the worker a little later.
  const requests = new Set<{ created: number; ended: number }>();
  const track = () => {
    work++;
    const request = { created: Date.now(), ended: 0 };
    requests.add(request);
    return () => {
      request.ended = request.ended || Date.now();
    };
  };
  // A promise-returning function, tracked from its call until its promise settles.
  const tracked = <A extends unknown[], R>(native: (...args: A) => Promise<R>) => function (this: unknown, ...args: A): Promise<R> {
    const end = track();
    try {
      const result = native.apply(this, args);
      result.then(end, end);
      return result;
    } catch (error) {
      end();
      throw error;
    }
  };
  if (typeof window.fetch === 'function') window.fetch = tracked(window.fetch);
  // Reading an answer's body takes as long as the body takes to arrive, and the network wait
  // stops at the headers of script requests (a stream may never end): a read is a request too.
  if (window.Response) {
    const body = Response.prototype as unknown as Record<string, unknown>;
    for (const name of ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text']) {
      const read = body[name];
      if (typeof read === 'function') body[name] = tracked(read as () => Promise<unknown>);
    }
  }
  if (window.XMLHttpRequest) {
    const nativeSend = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (this: XMLHttpRequest, ...args: Parameters<XMLHttpRequest['send']>) {
      const end = track();
      this.addEventListener('loadend', end, { once: true });
      try {
        return nativeSend.apply(this, args);
      } catch (error) {
        end();
        throw error;
      }
    };
  }
  // A file chooser the page opened (a click on a file input, or a script's input.click()):
  // Chromium tells the worker a moment later, and settling waits for that.
  let chooserAt = 0;
  const isFileInput = (el: unknown): boolean => !!el && (el as Element).tagName === 'INPUT' && String((el as HTMLInputElement).type).toLowerCase() === 'file';
  addEventListener('click', (event) => {
    const target = event.target as Partial<Element> | null;
    const label = target && target.closest ? target.closest('label') : null;
    if (isFileInput(target) || (label && isFileInput(label.control))) chooserAt = Date.now();
  }, true);
  if (window.HTMLInputElement) {
    const nativeClick = HTMLInputElement.prototype.click;
    HTMLInputElement.prototype.click = function (this: HTMLInputElement) {
      if (isFileInput(this)) chooserAt = Date.now();
      return nativeClick.apply(this);
    };
    const nativePicker = HTMLInputElement.prototype.showPicker;
    if (nativePicker) {
      HTMLInputElement.prototype.showPicker = function (this: HTMLInputElement) {
        if (isFileInput(this)) chooserAt = Date.now();
        return nativePicker.apply(this);
      };
    }
  }
  return {
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
    timersDue: (since, horizon) => timers.due(since, horizon),
  };
}

if (!Object.prototype.hasOwnProperty.call(window, PROBE_KEY)) Object.defineProperty(window, PROBE_KEY, { enumerable: false, value: install() });
