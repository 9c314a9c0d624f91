/**
 * One execution's browser session on Playwright: its context and pages (following allowed
 * popups), input, settling, screenshots and the screencast, all through the BrowserSession
 * port. Created by the sandbox (playwright-sandbox.ts), which owns the browser process. Its
 * parts: the tabs (tab-registry.ts), input (session-input.ts), settling (session-settle.ts), the
 * context's requests (network-activity.ts), the screencast (tab-screencast.ts), each tab's page
 * (playwright-tab.ts). Every call stops when the run's signal fires (cancellable.ts).
 */
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import type { Logger, Tracing } from '../telemetry/types.js';
import type { BlockReports } from './block-reports.js';
import { cancellable, settledOrAborted } from '../domain/cancel.js';
import type { SessionGuard } from './confinement.js';
import type { DownloadTracker } from './downloads.js';
import type { FileChooserTracker } from './file-chooser.js';
import { createFrameNavigations } from './frame-navigations.js';
import { createConsoleBudget, createLimitReporter, DEFAULT_PAGE_LIMITS } from './page-limits.js';
import { trackNetwork } from './network-activity.js';
import { firstLine, screenshotOf } from './playwright-tab.js';
import { createSessionInput } from './session-input.js';
import { createSettle } from './session-settle.js';
import { createTabRegistry } from './tab-registry.js';
import { followActiveTab } from './tab-screencast.js';
import type { BrowserSession, DownloadEvent, NavigationResult, Screencast, SessionOptions, TabInfo } from './types.js';

const NAVIGATION_TIMEOUT_MS = 30_000;

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
  /** Each settle wait becomes a span, a child of whatever runs it (an action, a replayed step). */
  tracing?: Tracing;
  onClosed: () => void;
}

export function createSession(parts: SessionParts): BrowserSession {
  const { browser, context, guard, options, logger } = parts;
  /** The context's requests: settle() waits only for those since the action. */
  const network = trackNetwork(context);
  const frameNavigations = createFrameNavigations();
  const limits = options.limits ?? DEFAULT_PAGE_LIMITS;
  let crashed = false;
  let closing: Promise<void> | undefined;

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

  const tabs = createTabRegistry(parts.page, { context, guard, files: parts.files, network, frameNavigations, onCrash: reportCrash,
    closing: () => closing !== undefined,
    limits,
    consoleBudget: createConsoleBudget(limits.consoleBytesMax),
    // Reaching a limit is a logged event, once per limit (docs/security.md#limits).
    reached: createLimitReporter(logger, options.onLimit),
  });
  if (parts.downloadRelay) parts.downloadRelay.listener = (download) => tabs.record({ type: 'download', download });
  const input = createSessionInput({ browser, activeTab: () => tabs.requireActive(), openTabs: () => tabs.open.length, closing: () => closing !== undefined, logger });
  const settleOnce = createSettle({ tabs, network, files: parts.files, frameNavigations, lastInputAt: () => input.lastInputAt(), logger });
  const { tracing } = parts;
  const settle = tracing?.enabled ? (signal: AbortSignal, sinceMs?: number) => tracing.inSpan('settle', {}, () => settleOnce(signal, sinceMs)) : settleOnce;

  /**
   * Runs a navigation of the active tab; a page that failed to load is an answer, a dead one an
   * exception. goto() takes no signal: on abort the load is stopped (its request cancelled) and
   * the call rejects with the signal's reason.
   */
  const navigation = async (signal: AbortSignal, go: (page: Page) => Promise<Response | null>): Promise<NavigationResult> => {
    const tab = tabs.requireActive();
    const page = tab.page;
    input.touch();
    // A tab already gone is loading nothing.
    const stop = () => void tab.cdp().then((c) => c.send('Page.stopLoading')).catch(() => undefined);
    return cancellable(
      signal,
      async () => {
        try {
          const response = await go(page);
          return { ok: true, url: page.url(), ...(response ? { status: response.status() } : {}) };
        } catch (error) {
          if (page.isClosed() || !browser.isConnected()) throw error;
          return { ok: false, url: page.url(), error: firstLine(error) };
        }
      },
      stop,
    );
  };

  const checkUrl = (url: string) => parts.reports.check(() => guard.checkUrl(url), { url, layer: 'navigate-tool' });

  const session: BrowserSession = {
    viewport: { ...options.viewport },

    async navigate(url, signal) {
      const verdict = checkUrl(url);
      if (!verdict.ok) return { ok: false, url: session.currentUrl(), error: `navigation to ${url} refused: ${verdict.reason}` };
      return navigation(signal, (page) => page.goto(url, { waitUntil: 'domcontentloaded', timeout: NAVIGATION_TIMEOUT_MS }));
    },
    history: (direction, signal) =>
      navigation(signal, (page) => {
        const options = { waitUntil: 'domcontentloaded' as const, timeout: NAVIGATION_TIMEOUT_MS };
        return direction === 'back' ? page.goBack(options) : direction === 'forward' ? page.goForward(options) : page.reload(options);
      }),
    checkUrl,
    currentUrl: () => tabs.requireActive().page.url(),

    async tabs(signal): Promise<TabInfo[]> {
      const current = tabs.active();
      return Promise.all(tabs.open.map(async (tab) => ({ id: tab.id, url: tab.url(), title: await tab.title(signal), active: tab === current })));
    },
    tab: (id) => (id === undefined ? tabs.active() : tabs.byId(id)),
    async newTab(signal) {
      signal.throwIfAborted();
      // Opening a page cannot be cancelled; it is quick, and the page closes with the session.
      const tab = await tabs.openOwn();
      return { id: tab.id, url: tab.page.url(), title: '', active: true };
    },
    async switchTab(id, signal) {
      const tab = tabs.byId(id);
      if (!tab) return false;
      tabs.activate(tab);
      // Bringing a page to the front only asks the browser to show it: nothing to cancel, and a
      // page that closed meanwhile is found by the next call.
      await settledOrAborted(signal, tab.page.bringToFront().catch(() => undefined));
      return true;
    },
    async closeTab(id, signal) {
      signal.throwIfAborted();
      const tab = tabs.byId(id);
      if (!tab) return { ok: false, error: `there is no open tab ${JSON.stringify(id)}` };
      if (tabs.open.length === 1) return { ok: false, error: 'the last open tab cannot be closed; navigate it instead' };
      // Without beforeunload, closing a page runs none of its scripts: it does not wait on the page.
      await tab.page.close({ runBeforeUnload: false });
      return { ok: true, value: null };
    },
    drainChanges: () => tabs.drainChanges(),

    mouseMove: input.mouseMove,
    mouseDown: input.mouseDown,
    mouseUp: input.mouseUp,
    click: input.click,
    wheel: input.wheel,
    pointer: input.pointer,
    keyDown: input.keyDown,
    keyUp: input.keyUp,
    typeText: input.typeText,

    screenshot: (shot, signal) => {
      const tab = tabs.requireActive();
      return screenshotOf(tab.page, tab.cdp, shot, signal);
    },
    settle,
    startScreencast: (cast, onFrame) => startScreencast(cast, onFrame),

    setInputFiles(names, target, signal) {
      input.touch();
      const page = tabs.requireActive().page;
      // Playwright takes no signal for giving files (local paths, no page script runs): the call
      // stops waiting on abort, and the files step ends within Playwright's own timeout.
      return cancellable(signal, () => parts.files.setFiles(page, names, target));
    },
    pendingFileChooser: () => parts.files.pending(tabs.requireActive().page),

    close() {
      closing ??= (async () => {
        browser.off('disconnected', onDisconnected);
        // A screencast whose page closed has stopped already; the recorder keeps what it got.
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
    const cast = await followActiveTab({ activeTab: tabs.active, onActiveChange: tabs.onActiveChange, closing: () => closing !== undefined, logger }, ...args);
    const stop = () => {
      screencasts.delete(stop);
      return cast.stop();
    };
    screencasts.add(stop);
    return { stop };
  }

  return session;
}
