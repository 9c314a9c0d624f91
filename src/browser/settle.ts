import type { Frame, Page } from 'playwright-core';
import { cancellable, settledOrAborted } from '../domain/cancel.js';
import { STILL_WAIT_SOURCE } from './page-scripts.generated.js';
import type { Busy, StillWaitArgs, StillWaitEnd } from './page/still-wait.js';

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

/**
 * The wait inside the page (page/still-wait.ts), in the document's own world where the probe
 * lives; the page code is built into a string (scripts/build-page-scripts.ts), never a function
 * serialised from here, which would carry the TypeScript loader's helpers into the page.
 */
const stillWait = (args: StillWaitArgs) => `(${STILL_WAIT_SOURCE}).stillWait(${JSON.stringify(args)})`;
/** Ends every still-wait under way in a document: the run has stopped. */
const STOP_WAITS = `(${STILL_WAIT_SOURCE}).stopWaits()`;

/** Errors that mean the document went away under the evaluation (a navigation, a closed tab). */
const DOCUMENT_GONE = /context was destroyed|Cannot find context|navigat|has been closed|Target closed|frame was detached/i;

/** How a page's wait ended, and at the cap what the page was still doing (page/still-wait.ts). */
export interface Stillness {
  end: StillWaitEnd['end'] | 'destroyed' | 'failed';
  heldBy?: Busy;
}

/**
 * Resolves when the page (or one frame of it) is still after an input made at `sinceMs` (epoch ms), or at the
 * deadline ('chooser' when the page opened a file chooser meanwhile, 'popup' when it asked for
 * a new tab or window): at least one animation frame (a pending paint lands), no timer the input
 * is waited for due within the horizon (page/settle-timers.ts: timeouts it set, the next ticks
 * of polls, never a clock's), no navigation under way, no script request made since the input still
 * unanswered (or just answered), and no DOM change for DOM_QUIET_MS (a clock's ticks aside).
 * 'destroyed' when a navigation replaced the document meanwhile; 'failed' when the page could
 * not run the wait at all (the caller then falls back on the network and load state alone).
 * 'quiet' at once when the signal fires; the wait in the page is ended too (or, in a page too
 * busy to be asked, at its own timer: the cap).
 */
export async function pageStill(page: Page | Frame, sinceMs: number, deadline: number, signal: AbortSignal): Promise<Stillness> {
  const capMs = deadline - Date.now();
  if (capMs <= 0 || signal.aborted || ('isClosed' in page ? page.isClosed() : page.isDetached())) return { end: 'quiet' };
  const args: StillWaitArgs = { sinceMs, capMs, quietMs: DOM_QUIET_MS, horizonMs: TIMER_HORIZON_MS };
  const late = new Error('the page did not answer within the settle cap');
  // A page that cannot be asked to stop (gone, or too busy) ends the wait at its own cap.
  const stopWaits = () => void page.evaluate(STOP_WAITS).catch(() => undefined);
  try {
    // The in-page timer ends the wait in a live document; a document being replaced may never
    // run it, so the wait is bounded out here too (the evaluation is dropped with its document).
    const state = await settledOrAborted(signal, withinMs(capMs + 250, page.evaluate<StillWaitEnd>(stillWait(args)), () => late), stopWaits);
    return state ?? { end: 'quiet' };
  } catch (error) {
    // No answer by the cap (a renderer starved on a loaded machine, or a document on its way
    // out): the wait is over either way, as it would be at the cap.
    if (error === late) return { end: 'quiet' };
    return { end: DOCUMENT_GONE.test(String(error)) ? 'destroyed' : 'failed' };
  }
}

/**
 * Resolves or rejects like `work`, or rejects after `ms` with `late()`. For browser calls that
 * can wait on a document that never comes; what is left pending ends when its page or session
 * closes.
 */
export async function withinMs<T>(ms: number, work: Promise<T>, late: () => Error = () => new Error(`no answer from the page within ${ms} ms`)): Promise<T> {
  const timeout = AbortSignal.timeout(ms);
  try {
    return await cancellable(timeout, () => work);
  } catch (error) {
    throw timeout.aborted && error === timeout.reason ? late() : error;
  }
}
