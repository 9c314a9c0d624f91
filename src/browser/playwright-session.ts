/**
 * One execution's browser session on Playwright: its context and pages (following allowed
 * popups), input, settling, screenshots and the screencast, all through the BrowserSession
 * port. Created by the sandbox (playwright-sandbox.ts), which owns the browser process. The
 * context's requests are followed in network-activity.ts, the screencast in tab-screencast.ts,
 * each tab's page in playwright-tab.ts.
 */
import { type Browser, type BrowserContext, type Dialog, type Page, type Response } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import type { BlockReports } from './block-reports.js';
import type { SessionGuard } from './confinement.js';
import type { DownloadTracker } from './downloads.js';
import type { FileChooserTracker } from './file-chooser.js';
import { KEYSTROKE_BATCH, keystrokesFor } from './keystrokes.js';
import { trackNetwork } from './network-activity.js';
import { createPlaywrightTab, firstLine, screenshotOf, type PlaywrightTab } from './playwright-tab.js';
import { createFrameNavigations } from './frame-navigations.js';
import { pageStill } from './settle.js';
import { followActiveTab } from './tab-screencast.js';
import { waitUntil } from './wait-until.js';
import type { BrowserChange, DownloadEvent, BrowserSession, MouseButton, NavigationResult, Screencast, SessionOptions, TabInfo } from './types.js';

export { firstLine, jpegSize, pngSize } from './playwright-tab.js';

const NAVIGATION_TIMEOUT_MS = 30_000;
/** settle() never waits longer than this, whatever the page does. */
const SETTLE_CAP_MS = 2_000;
/**
 * How long settle() waits, past its cap, for a tab the page asked for to show its first document
 * (or be refused): the agent's next report lists the tab, however slow the machine.
 */
const POPUP_WAIT_MS = 10_000;
/** Changes kept for the agent between two reports (a page opening dialogs in a loop). */
const CHANGES_MAX = 100;

export interface SessionParts {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  guard: SessionGuard;
  options: SessionOptions;
  reports: BlockReports;
  /** File choosers and inputs of the context's pages (file-chooser.ts). */
  files: FileChooserTracker;
  /** Where the sandbox relays download events for the session's change log. */
  downloadRelay?: { listener?: (event: DownloadEvent) => void };
  /** Present when the session saves downloads (downloads.ts). */
  downloads?: DownloadTracker;
  logger: Logger;
  onClosed: () => void;
}

export function createSession(parts: SessionParts): BrowserSession {
  const { browser, context, guard, options, logger } = parts;
  /** Open tabs, oldest first. A popup joins once it shows an allowed document. */
  const tabs: PlaywrightTab[] = [];
  const tabOf = new Map<Page, PlaywrightTab>();
  /** Tabs in the order they were last active: when the active one closes, the one before it takes over. */
  const activations: PlaywrightTab[] = [];
  let nextTabNumber = 1;
  const changes: BrowserChange[] = [];
  /** The context's requests: settle() waits only for those since the action. */
  const network = trackNetwork(context);
  const activeListeners = new Set<() => void>();
  let pointer = { x: 0, y: 0 };
  let crashed = false;
  /** Main-frame navigations of any page so far; settle() watches it change. */
  let navigations = 0;
  /** When the agent last acted. */
  let lastInputAt = 0;
  /**
   * When a page the worker did not open last came to an outcome: it joined as a tab, closed
   * before joining (refused, or a download), or an existing tab took the navigation instead.
   */
  let popupOutcomeAt = 0;
  const popupListeners = new Set<() => void>();
  const frameNavigations = createFrameNavigations();
  let closing: Promise<void> | undefined;

  /** A frame the action navigated: its document committed (or refused), loaded and still, by the deadline. */
  const framesStill = async (page: Page, since: number, deadline: number, signal: AbortSignal) => {
    for (const frame of frameNavigations.startedSince(page, since)) {
      await waitUntil(() => frameNavigations.settledSince(frame, since), frameNavigations.wakers, deadline - Date.now(), signal);
      const left = deadline - Date.now();
      // A refused frame shows the browser's error page: nothing of it loads or changes.
      if (frame.isDetached() || left <= 0 || signal.aborted || !/^https?:/i.test(frame.url())) continue;
      await frame.waitForLoadState('load', { timeout: left }).catch(() => undefined);
      // The frame's document is new: every timer and change of it came after the action.
      await pageStill(frame, since, deadline);
    }
  };

  const record = (change: BrowserChange) => {
    changes.push(change);
    if (changes.length > CHANGES_MAX) changes.splice(0, changes.length - CHANGES_MAX);
  };
  const notify = (listeners: Set<() => void>) => [...listeners].forEach((fn) => fn());
  const popupOutcome = () => {
    popupOutcomeAt = Date.now();
    notify(popupListeners);
  };
  /** The tab the agent acts on; none once the browser has closed them all (it died). */
  const activeTab = (): PlaywrightTab | undefined => activations[activations.length - 1] ?? tabs[tabs.length - 1];
  const requireTab = (): PlaywrightTab => {
    const tab = activeTab();
    if (!tab) throw new Error('the browser has no open tab');
    return tab;
  };
  const active = (): Page => requireTab().page;
  const activate = (tab: PlaywrightTab) => {
    const at = activations.indexOf(tab);
    if (at === activations.length - 1 && at >= 0) return;
    if (at >= 0) activations.splice(at, 1);
    activations.push(tab);
    notify(activeListeners);
  };

  /**
   * Delivers an input to the agent's page. A popup may close under it (its own "Close" button
   * closes the window while Playwright still waits for the end of the click): that input was
   * taken, and the agent acts on the page below from now on. Any other failure is thrown.
   */
  const input = async (fn: (page: Page) => Promise<void>): Promise<void> => {
    lastInputAt = Date.now();
    const page = active();
    try {
      await fn(page);
    } catch (error) {
      // The last tab closing, or the browser going away, ends the session: that is thrown.
      if (tabs.length <= 1 || closing || !browser.isConnected() || !(await closedUnderInput(page, error))) throw error;
      logger.debug({ err: firstLine(error) }, 'the tab closed under the input; acting on the tab below');
    }
  };

  const reportCrash = (error: Error) => {
    if (crashed || closing) return;
    crashed = true;
    logger.error({ err: error }, 'browser session crashed');
    options.onCrash?.(error);
  };
  const onDisconnected = () => {
    reportCrash(new Error('the browser disconnected'));
    // The context died with the browser; release what the session holds.
    void session.close();
  };
  browser.on('disconnected', onDisconnected);

  /**
   * A page of the context becomes a tab. The worker's own pages (the first one, new_tab) are
   * tabs at once; a popup the page opened only once it has committed an allowed document: one
   * the confinement refuses is closed by it, and must never receive the agent's keystrokes in
   * the meantime. A popup that joins becomes the active tab, as a browser shows it.
   */
  /** Pages the worker is about to open itself (new_tab): the context announces them like popups. */
  let ownPagesExpected = 0;
  const adopt = (page: Page, own: boolean): PlaywrightTab => {
    const tab = createPlaywrightTab(`tab_${nextTabNumber++}`, page, {
      setFilesOn: (element, names) => parts.files.setFilesOn(page, element, names),
      setFilesToChooser: (names) => (parts.files.pending(page) ? parts.files.setFiles(page, names, { kind: 'chooser' }) : undefined),
    });
    tabOf.set(page, tab);
    if (own) guard.trustPage(page);
    const join = () => {
      if (tabs.includes(tab) || page.isClosed() || closing) return;
      tabs.push(tab);
      if (!own) record({ type: 'tab_opened', tabId: tab.id });
      activate(tab);
      if (!own) popupOutcome();
    };
    // Playwright may announce a popup after its first document already committed.
    if (own || /^https?:/i.test(page.url())) join();
    frameNavigations.follow(page);
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) return;
      navigations++;
      // A link aimed at a named window that is already open navigates that tab.
      if (tabs.includes(tab) && tab !== activeTab()) popupOutcome();
      // Only allowed http(s) documents can commit (the proxy and the guard refuse the rest);
      // error pages and about:blank do not make a popup a tab.
      if (/^https?:/i.test(frame.url())) join();
    });
    page.on('crash', () => {
      if (tab === activeTab()) reportCrash(new Error('the page crashed'));
    });
    page.on('dialog', (dialog: Dialog) => {
      // Nobody answers a dialog in an unattended run. Leaving a page is allowed; every other
      // dialog is dismissed, and the agent is told what it said.
      const kind = dialog.type();
      const leave = kind === 'beforeunload';
      (leave ? dialog.accept() : dialog.dismiss()).catch(() => undefined);
      if (!leave) record({ type: 'dialog_dismissed', tabId: tab.id, kind, message: dialog.message() });
    });
    page.on('close', () => {
      if (!own && !tabs.includes(tab)) popupOutcome();
      const wasActive = tab === activeTab();
      for (const list of [tabs, activations]) {
        const index = list.indexOf(tab);
        if (index >= 0) list.splice(index, 1);
      }
      tabOf.delete(page);
      tab.dispose();
      network.forget(page);
      if (wasActive) notify(activeListeners);
    });
    return tab;
  };
  adopt(parts.page, true);
  if (parts.downloadRelay) parts.downloadRelay.listener = (download) => record({ type: 'download', download });
  context.on('page', (page) => {
    if (closing || tabOf.has(page)) return;
    const own = ownPagesExpected > 0;
    if (own) ownPagesExpected--;
    adopt(page, own);
  });
  guard.onRefusedNavigation((page, url) => {
    const tab = tabOf.get(page);
    if (tab) record({ type: 'navigation_refused', tabId: tab.id, url });
  });
  /** Runs a navigation of the active tab; a page that failed to load is an answer, a dead one an exception. */
  const navigation = async (signal: AbortSignal, go: (page: Page) => Promise<Response | null>): Promise<NavigationResult> => {
    const tab = requireTab();
    const page = tab.page;
    lastInputAt = Date.now();
    // goto() takes no signal: stopping the load makes it fail fast instead.
    const stop = () => void tab.cdp().then((c) => c.send('Page.stopLoading')).catch(() => undefined);
    signal.addEventListener('abort', stop, { once: true });
    try {
      const response = await go(page);
      return { ok: true, url: page.url(), ...(response ? { status: response.status() } : {}) };
    } catch (error) {
      if (page.isClosed() || !browser.isConnected()) throw error;
      return { ok: false, url: page.url(), error: firstLine(error) };
    } finally {
      signal.removeEventListener('abort', stop);
    }
  };

  const checkUrl = (url: string) => parts.reports.check(() => guard.checkUrl(url), { url, layer: 'navigate-tool' });
  /** A page that keeps requests open after an action costs every step the whole cap: say which. */
  const logCapped = (pending: string[]) => logger.debug({ pending: pending.slice(0, 5).map((url) => url.slice(0, 200)), count: pending.length }, 'settle stopped waiting for requests at its cap');

  const session: BrowserSession = {
    viewport: { ...options.viewport },

    async navigate(url: string, signal: AbortSignal): Promise<NavigationResult> {
      const verdict = checkUrl(url);
      if (!verdict.ok) return { ok: false, url: session.currentUrl(), error: `navigation to ${url} refused: ${verdict.reason}` };
      return navigation(signal, (page) => page.goto(url, { waitUntil: 'domcontentloaded', timeout: NAVIGATION_TIMEOUT_MS }));
    },

    async history(direction, signal) {
      const result = await navigation(signal, (page) => {
        const options = { waitUntil: 'domcontentloaded' as const, timeout: NAVIGATION_TIMEOUT_MS };
        return direction === 'back' ? page.goBack(options) : direction === 'forward' ? page.goForward(options) : page.reload(options);
      });
      return result;
    },

    checkUrl,
    currentUrl: () => active().url(),

    async tabs(): Promise<TabInfo[]> {
      const current = activeTab();
      return Promise.all(tabs.map(async (tab) => ({ id: tab.id, url: tab.url(), title: await tab.title(), active: tab === current })));
    },
    tab: (id) => (id === undefined ? activeTab() : tabs.find((tab) => tab.id === id)),
    async newTab() {
      // The context announces the page (and the handler counts it as ours) before newPage()
      // resolves. If it fails, nothing was announced: a later popup must not pass as ours.
      ownPagesExpected++;
      let page: Page;
      try {
        page = await context.newPage();
      } catch (error) {
        ownPagesExpected = Math.max(0, ownPagesExpected - 1);
        throw error;
      }
      const tab = tabOf.get(page) ?? adopt(page, true);
      activate(tab);
      return { id: tab.id, url: page.url(), title: '', active: true };
    },
    async switchTab(id) {
      const tab = tabs.find((t) => t.id === id);
      if (!tab) return false;
      activate(tab);
      await tab.page.bringToFront().catch(() => undefined);
      return true;
    },
    async closeTab(id) {
      const tab = tabs.find((t) => t.id === id);
      if (!tab) return { ok: false, error: `there is no open tab ${JSON.stringify(id)}` };
      if (tabs.length === 1) return { ok: false, error: 'the last open tab cannot be closed; navigate it instead' };
      await tab.page.close({ runBeforeUnload: false });
      return { ok: true, value: null };
    },
    drainChanges: () => changes.splice(0),

    async mouseMove(x, y) {
      await input((page) => page.mouse.move(x, y));
      pointer = { x, y };
    },
    mouseDown: (button) => input((page) => pressButton(page, button, 'down', pointer)),
    mouseUp: (button) => input((page) => pressButton(page, button, 'up', pointer)),
    async click(x, y, { button, clickCount }) {
      await input(async (page) => {
        if (isPlaywrightButton(button)) await page.mouse.click(x, y, { button, clickCount });
        else {
          await page.mouse.move(x, y);
          await pressButton(page, button, 'down', { x, y });
          await pressButton(page, button, 'up', { x, y });
        }
      });
      pointer = { x, y };
    },
    async wheel(x, y, deltaX, deltaY) {
      await input(async (page) => {
        await page.mouse.move(x, y);
        pointer = { x, y };
        await page.mouse.wheel(deltaX, deltaY);
      });
    },
    pointer: () => ({ ...pointer }),

    keyDown: (key) => input((page) => page.keyboard.down(key)),
    keyUp: (key) => input((page) => page.keyboard.up(key)),
    typeText: (text) =>
      input(async () => {
        // All of a batch's key events at once; CDP keeps them in order (see keystrokes.ts).
        const client = await requireTab().cdp();
        const commands = keystrokesFor(text);
        for (let i = 0; i < commands.length; i += KEYSTROKE_BATCH) {
          await Promise.all(commands.slice(i, i + KEYSTROKE_BATCH).map((c) => client.send(c.method, c.params)));
        }
      }),

    screenshot: async (shot) => {
      const tab = requireTab();
      return screenshotOf(tab.page, tab.cdp, shot);
    },

    async settle(signal) {
      let deadline = Date.now() + SETTLE_CAP_MS;
      try {
        const page = active();
        const navigationsBefore = navigations;
        // The page first (it knows of a request or navigation the instant it is made), then
        // the network for what only the browser sees (images, styles, fonts).
        const since = lastInputAt;
        const dom = await pageStill(page, since, deadline);
        // A file chooser the page opened is announced a moment later: the agent is told of it.
        if (dom === 'chooser') await parts.files.whenPending(page, deadline - Date.now());
        // So is a new tab, once it shows its first document (or is refused); it then loads
        // with the time a navigation gets.
        if (dom === 'popup' && popupOutcomeAt < since) {
          await waitUntil(() => popupOutcomeAt >= since, popupListeners, POPUP_WAIT_MS, signal);
          deadline = Math.max(deadline, Date.now() + SETTLE_CAP_MS);
        }
        const pending = await network.quiet(since, deadline, signal);
        if (signal.aborted) return;
        if (pending.length > 0) logCapped(pending);
        if (dom === 'failed') logger.warn({ url: page.url() }, 'the page could not run the settle check; settling on network and load state only');
        const navigated = dom === 'destroyed' || navigations !== navigationsBefore || active() !== page;
        if (!navigated) {
          await framesStill(page, since, deadline, signal);
          return;
        }
        // A navigation replaced the document (or a popup took over): let it load, then watch it.
        const current = active();
        const left = deadline - Date.now();
        if (left > 0 && !current.isClosed()) await current.waitForLoadState('load', { timeout: left }).catch(() => undefined);
        const loadedAt = Date.now();
        if (signal.aborted) return;
        await pageStill(current, loadedAt, deadline);
        const stillPending = await network.quiet(loadedAt, deadline, signal);
        if (stillPending.length > 0) logCapped(stillPending);
      } catch (error) {
        logger.debug({ err: firstLine(error) }, 'settle ended early');
      }
    },

    startScreencast: (cast, onFrame) => startScreencast(cast, onFrame),

    setInputFiles(names, target) {
      lastInputAt = Date.now();
      return parts.files.setFiles(active(), names, target);
    },
    pendingFileChooser: () => parts.files.pending(active()),

    close() {
      closing ??= (async () => {
        browser.off('disconnected', onDisconnected);
        for (const stop of [...screencasts]) await stop().catch(() => undefined);
        // Downloads still running get their grace, then are cancelled and reported, while their
        // context is alive.
        await parts.downloads?.close().catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'closing downloads failed'));
        // The context first, then the session's proxy. While a context is disposed, requests its
        // pages still send (pagehide beacons, a script mid-fetch) are no longer paused for the
        // Playwright guard: the proxy, still open, is the layer that refuses them.
        await context.close().catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'context close failed'));
        await guard.close().catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'confinement close failed'));
        parts.onClosed();
      })();
      return closing;
    },
  };

  /** Screencasts still running: the session stops them when it closes. */
  const screencasts = new Set<() => Promise<void>>();
  async function startScreencast(...args: Parameters<BrowserSession['startScreencast']>): Promise<Screencast> {
    const cast = await followActiveTab(
      {
        activeTab,
        onActiveChange: (listener) => {
          activeListeners.add(listener);
          return () => activeListeners.delete(listener);
        },
        closing: () => closing !== undefined,
        logger,
      },
      ...args,
    );
    const stop = () => {
      screencasts.delete(stop);
      return cast.stop();
    };
    screencasts.add(stop);
    return { stop };
  }

  return session;
}



function isPlaywrightButton(button: MouseButton): button is 'left' | 'right' | 'middle' {
  return button === 'left' || button === 'right' || button === 'middle';
}

/** Playwright's mouse knows left/right/middle; back and forward go through CDP. */
async function pressButton(page: Page, button: MouseButton, direction: 'down' | 'up', at: { x: number; y: number }): Promise<void> {
  if (isPlaywrightButton(button)) {
    await (direction === 'down' ? page.mouse.down({ button }) : page.mouse.up({ button }));
    return;
  }
  const client = await page.context().newCDPSession(page);
  try {
    await client.send('Input.dispatchMouseEvent', { type: direction === 'down' ? 'mousePressed' : 'mouseReleased', x: at.x, y: at.y, button, clickCount: 1 });
  } finally {
    await client.detach().catch(() => undefined);
  }
}

/**
 * Whether `error` only says that `page` closed while it took an input. Playwright may reject
 * the input before the page's close event arrives: then the event is awaited, briefly.
 */
export async function closedUnderInput(page: Pick<Page, 'isClosed' | 'waitForEvent'>, error: unknown, waitMs = 2_000): Promise<boolean> {
  if (page.isClosed()) return true;
  const targetClosed = error instanceof Error && (error.name === 'TargetClosedError' || /target page, context or browser has been closed|target closed/i.test(error.message));
  if (!targetClosed) return false;
  return page.waitForEvent('close', { timeout: waitMs }).then(
    () => true,
    () => page.isClosed(),
  );
}
