/**
 * One execution's browser session on Playwright: its context and pages (following allowed
 * popups), input, settling, screenshots and the screencast, all through the BrowserSession
 * port. Created by the sandbox (playwright-sandbox.ts), which owns the browser process.
 */
import { type Browser, type BrowserContext, type CDPSession, type Dialog, type Page, type Request, type Response } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import type { SessionGuard } from './confinement.js';
import type { DownloadTracker } from './downloads.js';
import type { FileChooserTracker } from './file-chooser.js';
import { KEYSTROKE_BATCH, keystrokesFor } from './keystrokes.js';
import { createPlaywrightTab, firstLine, jpegSize, screenshotOf, type PlaywrightTab } from './playwright-tab.js';
import { pageStill } from './settle.js';
import type {
  BlockedRequest,
  BrowserChange,
  DownloadEvent,
  BrowserSession,
  FrameHandler,
  MouseButton,
  NavigationResult,
  Screencast,
  ScreencastOptions,
  SessionOptions,
  TabInfo,
} from './types.js';

export { firstLine, jpegSize, pngSize } from './playwright-tab.js';

const NAVIGATION_TIMEOUT_MS = 30_000;
/** settle() never waits longer than this, whatever the page does. */
const SETTLE_CAP_MS = 2_000;
/** Changes kept for the agent between two reports (a page opening dialogs in a loop). */
const CHANGES_MAX = 100;
/** After a request that started or ended since the action, the network must be idle this long. */
const QUIET_MS = 60;
/** Long-lived requests that never "finish": they must not hold settle() to its cap. */
const STREAMING_TYPES = new Set(['eventsource', 'websocket']);
/**
 * Requests a page's script made: done for the network wait once their answer's headers are in.
 * Their body is the page's business (a stream may never end; one the page reads is waited for
 * by the settle probe, which knows when the read resolves).
 */
const SCRIPT_TYPES = new Set(['fetch', 'xhr']);

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
  /** Requests under way, with when each started: settle() waits only for those since the action. */
  const inflight = new Map<Request, number>();
  const networkListeners = new Set<() => void>();
  const activeListeners = new Set<() => void>();
  let pointer = { x: 0, y: 0 };
  let crashed = false;
  /** Main-frame navigations of any page so far; settle() watches it change. */
  let navigations = 0;
  /** When the network last started or finished a request, and when the agent last acted. */
  let lastNetworkAt = 0;
  let lastInputAt = 0;
  let closing: Promise<void> | undefined;

  const record = (change: BrowserChange) => {
    changes.push(change);
    if (changes.length > CHANGES_MAX) changes.splice(0, changes.length - CHANGES_MAX);
  };
  const notify = (listeners: Set<() => void>) => [...listeners].forEach((fn) => fn());
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
    logger.error({ err: error.message }, 'browser session crashed');
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
    };
    // Playwright may announce a popup after its first document already committed.
    if (own || /^https?:/i.test(page.url())) join();
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) return;
      navigations++;
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
      const wasActive = tab === activeTab();
      for (const list of [tabs, activations]) {
        const index = list.indexOf(tab);
        if (index >= 0) list.splice(index, 1);
      }
      tabOf.delete(page);
      tab.dispose();
      for (const request of inflight.keys()) if (frameOwner(request) === page) inflight.delete(request);
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
  const settled = (request: Request) => {
    if (!inflight.delete(request)) return;
    lastNetworkAt = Date.now();
    notify(networkListeners);
  };
  context.on('request', (request) => {
    if (STREAMING_TYPES.has(request.resourceType())) return;
    inflight.set(request, Date.now());
    lastNetworkAt = Date.now();
    notify(networkListeners);
  });
  context.on('response', (response) => {
    const request = response.request();
    if (SCRIPT_TYPES.has(request.resourceType())) settled(request);
  });
  context.on('requestfinished', settled);
  context.on('requestfailed', settled);

  /**
   * Resolves once no request started at or after `sinceMs` is in flight and, when one started or
   * ended after `sinceMs`, QUIET_MS passed since the last one; or at the deadline. Requests older
   * than the action (a long poll, a stream the page keeps open) are not its consequence.
   * Resolves with the URLs still awaited when the deadline came (none when the network went quiet).
   */
  const networkQuiet = (sinceMs: number, deadline: number, signal: AbortSignal) =>
    new Promise<string[]>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const waiting = () => [...inflight.values()].some((startedAt) => startedAt >= sinceMs);
      const awaited = () => [...inflight].filter(([, startedAt]) => startedAt >= sinceMs).map(([request]) => request.url());
      const finish = (pending: string[] = []) => {
        clearTimeout(timer);
        networkListeners.delete(check);
        signal.removeEventListener('abort', onAbort);
        resolve(pending);
      };
      const onAbort = () => finish();
      function check() {
        clearTimeout(timer);
        const left = deadline - Date.now();
        if (signal.aborted) return finish();
        if (left <= 0) return finish(awaited());
        if (waiting()) {
          timer = setTimeout(check, left);
          return;
        }
        // No request since the input: nothing to wait for. Requests the input caused are seen
        // by the page check first (fetch, XHR, a form or link navigation), which runs before
        // this one; a request that ended lately leaves the page a moment to show its answer.
        if (lastNetworkAt < sinceMs) return finish();
        const idleFor = Date.now() - lastNetworkAt;
        if (idleFor >= QUIET_MS) return finish();
        timer = setTimeout(check, Math.min(QUIET_MS - idleFor, left));
      }
      networkListeners.add(check);
      signal.addEventListener('abort', onAbort, { once: true });
      check();
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
      const deadline = Date.now() + SETTLE_CAP_MS;
      try {
        const page = active();
        const navigationsBefore = navigations;
        // The page first (it knows of a request or navigation the instant it is made), then
        // the network for what only the browser sees (images, styles, fonts).
        const since = lastInputAt;
        const dom = await pageStill(page, since, deadline);
        // A file chooser the page opened is announced a moment later: the agent is told of it.
        if (dom === 'chooser') await parts.files.whenPending(page, deadline - Date.now());
        const pending = await networkQuiet(since, deadline, signal);
        if (signal.aborted) return;
        if (pending.length > 0) logCapped(pending);
        if (dom === 'failed') logger.warn({ url: page.url() }, 'the page could not run the settle check; settling on network and load state only');
        const navigated = dom === 'destroyed' || navigations !== navigationsBefore || active() !== page;
        if (!navigated) return;
        // A navigation replaced the document (or a popup took over): let it load, then watch it.
        const current = active();
        const left = deadline - Date.now();
        if (left > 0 && !current.isClosed()) await current.waitForLoadState('load', { timeout: left }).catch(() => undefined);
        const loadedAt = Date.now();
        if (signal.aborted) return;
        await pageStill(current, loadedAt, deadline);
        const stillPending = await networkQuiet(loadedAt, deadline, signal);
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

  const screencasts = new Set<() => Promise<void>>();

  /** Streams the active tab; when another tab becomes active, moves the stream there. */
  async function startScreencast(cast: ScreencastOptions, onFrame: FrameHandler): Promise<Screencast> {
    let stopped = false;
    let current: { page: Page; client: CDPSession; handler: (event: ScreencastFramePayload) => void } | undefined;
    let chain = Promise.resolve();
    let delivery = Promise.resolve();

    const detach = async () => {
      const was = current;
      current = undefined;
      if (!was) return;
      was.client.off('Page.screencastFrame', was.handler);
      await was.client.send('Page.stopScreencast').catch(() => undefined);
    };
    const attach = async (tab: PlaywrightTab) => {
      const client = await tab.cdp();
      const handler = (event: ScreencastFramePayload) => {
        const ack = () => client.send('Page.screencastFrameAck', { sessionId: event.sessionId }).catch(() => undefined);
        if (stopped || current?.client !== client) return void ack();
        const data = Buffer.from(event.data, 'base64');
        const size = jpegSize(data) ?? { width: event.metadata.deviceWidth, height: event.metadata.deviceHeight };
        // metadata.timestamp is seconds since the epoch (fractional).
        const timestampMs = event.metadata.timestamp !== undefined ? event.metadata.timestamp * 1000 : Date.now();
        // One frame at a time, in order, each acknowledged only when the consumer is done with
        // it: that is the back-pressure (Chromium keeps a frame or two in flight at most).
        delivery = delivery.then(async () => {
          try {
            if (!stopped) await onFrame({ data, timestampMs, ...size });
          } catch (error) {
            logger.warn({ err: firstLine(error) }, 'screencast frame handler failed');
          } finally {
            void ack();
          }
        });
      };
      client.on('Page.screencastFrame', handler);
      current = { page: tab.page, client, handler };
      await client.send('Page.startScreencast', { format: 'jpeg', quality: cast.quality, maxWidth: cast.maxWidth, maxHeight: cast.maxHeight, everyNthFrame: 1 });
    };
    const follow = () => {
      chain = chain.then(async () => {
        const tab = activeTab();
        if (stopped || current?.page === tab?.page) return;
        await detach();
        if (tab && !tab.page.isClosed() && !closing) await attach(tab).catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'screencast could not follow the page'));
      });
    };
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        stopped = true;
        activeListeners.delete(follow);
        screencasts.delete(stop);
        await chain;
        await detach();
      })();
      return stopping;
    };
    activeListeners.add(follow);
    screencasts.add(stop);
    follow();
    await chain;
    return { stop };
  }

  return session;
}

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

interface ScreencastFramePayload {
  data: string;
  sessionId: number;
  metadata: { deviceWidth: number; deviceHeight: number; timestamp?: number };
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

function frameOwner(request: Request): Page | undefined {
  try {
    return request.frame().page();
  } catch {
    // Service-worker requests have no frame.
    return undefined;
  }
}




