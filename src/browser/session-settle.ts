/**
 * A session's settle(): after an action, waits until the agent's page is still enough to
 * capture. The page first (settle.ts: it knows of a request or navigation the instant it is
 * made), then the network for what only the browser sees, then what the action started: a file
 * chooser, a new tab, a navigation, frames it navigated. Bounded by a cap; every wait ends when
 * the run's signal fires (docs/action-spaces.md#cancellation).
 */
import type { Page } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import { settledOrAborted } from '../domain/cancel.js';
import type { FileChooserTracker } from './file-chooser.js';
import type { FrameNavigations } from './frame-navigations.js';
import type { NetworkActivity } from './network-activity.js';
import { firstLine } from './playwright-tab.js';
import { pageStill } from './settle.js';
import type { TabRegistry } from './tab-registry.js';
import { waitUntil } from './wait-until.js';

/** settle() never waits longer than this, whatever the page does. */
const SETTLE_CAP_MS = 2_000;
/**
 * How long settle() waits, past its cap, for a tab the page asked for to show its first document
 * (or be refused): the agent's next report lists the tab, however slow the machine.
 */
const POPUP_WAIT_MS = 10_000;

export interface SettleParts {
  tabs: TabRegistry;
  network: NetworkActivity;
  files: FileChooserTracker;
  frameNavigations: FrameNavigations;
  /** When the agent last acted (epoch ms): settling waits for what came since. */
  lastInputAt: () => number;
  logger: Logger;
}

/**
 * The session's settle(): waits for what came since the agent's last input event, or since
 * `sinceMs` when the action changed the page another way (a value set by script, a script run)
 * and says when it started.
 */
export function createSettle(parts: SettleParts): (signal: AbortSignal, sinceMs?: number) => Promise<void> {
  const { tabs, network, files, frameNavigations, logger } = parts;
  /** A page that keeps requests open after an action costs every step the whole cap: say which. */
  const logCapped = (pending: string[]) => {
    if (pending.length > 0) logger.debug({ pending: pending.slice(0, 5).map((url) => url.slice(0, 200)), count: pending.length }, 'settle stopped waiting for requests at its cap');
  };
  /** So does a page that keeps changing or keeps timers going: say what it was still doing. */
  const stillOrCapped = async (page: Page | ReturnType<Page['mainFrame']>, since: number, deadline: number, signal: AbortSignal) => {
    const still = await pageStill(page, since, deadline, signal);
    if (still.heldBy) logger.debug({ heldBy: still.heldBy, url: page.url().slice(0, 200) }, 'settle stopped waiting for the page at its cap');
    return still.end;
  };
  /** Playwright's load wait takes no signal: it ends at its timeout (the deadline) if the run stops first. */
  const loaded = (page: Page | ReturnType<Page['mainFrame']>, deadline: number, signal: AbortSignal) => {
    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return Promise.resolve();
    // A load that does not come by the deadline, or a page that closes, ends this wait as the deadline would.
    return settledOrAborted(signal, page.waitForLoadState('load', { timeout: left }).catch(() => undefined));
  };

  /** A frame the action navigated: its document committed (or refused), loaded and still, by the deadline. */
  const framesStill = async (page: Page, since: number, deadline: number, signal: AbortSignal) => {
    for (const frame of frameNavigations.startedSince(page, since)) {
      await waitUntil(() => frameNavigations.settledSince(frame, since), frameNavigations.wakers, deadline - Date.now(), signal);
      // A refused frame shows the browser's error page: nothing of it loads or changes.
      if (frame.isDetached() || deadline <= Date.now() || signal.aborted || !/^https?:/i.test(frame.url())) continue;
      await loaded(frame, deadline, signal);
      // The frame's document is new: every timer and change of it came after the action.
      await stillOrCapped(frame, since, deadline, signal);
    }
  };

  const settle = async (signal: AbortSignal, sinceMs: number | undefined): Promise<void> => {
    let deadline = Date.now() + SETTLE_CAP_MS;
    const page = tabs.requireActive().page;
    const navigationsBefore = tabs.navigations();
    const since = Math.max(parts.lastInputAt(), sinceMs ?? 0);
    const dom = await stillOrCapped(page, since, deadline, signal);
    // A file chooser the page opened is announced a moment later: the agent is told of it.
    if (dom === 'chooser') await files.whenPending(page, deadline - Date.now(), signal);
    // So is a new tab, once it shows its first document (or is refused); it then loads
    // with the time a navigation gets.
    if (dom === 'popup' && tabs.popupOutcomeAt() < since) {
      await waitUntil(() => tabs.popupOutcomeAt() >= since, tabs.popupWakers, POPUP_WAIT_MS, signal);
      deadline = Math.max(deadline, Date.now() + SETTLE_CAP_MS);
    }
    const pending = await network.quiet(since, deadline, signal);
    if (signal.aborted) return;
    logCapped(pending);
    if (dom === 'failed') logger.warn({ url: page.url() }, 'the page could not run the settle check; settling on network and load state only');
    const current = tabs.requireActive().page;
    const navigated = dom === 'destroyed' || tabs.navigations() !== navigationsBefore || current !== page;
    if (!navigated) {
      await framesStill(page, since, deadline, signal);
      return;
    }
    // A navigation replaced the document (or a popup took over): let it load, then watch it.
    if (!current.isClosed()) await loaded(current, deadline, signal);
    const loadedAt = Date.now();
    if (signal.aborted) return;
    await stillOrCapped(current, loadedAt, deadline, signal);
    logCapped(await network.quiet(loadedAt, deadline, signal));
  };

  return async (signal, sinceMs) => {
    try {
      await settle(signal, sinceMs);
    } catch (error) {
      logger.debug({ err: firstLine(error) }, 'settle ended early');
    }
  };
}
