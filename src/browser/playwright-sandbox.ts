/**
 * The browser port on Playwright + Chromium: one Chromium per sandbox (launched on first use,
 * launched again if it died), one fresh BrowserContext per session, confined to the session's
 * allow-list by the confinement layer. Screenshots and the screencast go straight to CDP: it is
 * the fastest path and lets zoom render a region at a higher scale instead of upscaling pixels.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page, type Request } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import { createConfinement, type SessionGuard } from './confinement.js';
import { pageStill, SETTLE_PROBE_SCRIPT } from './settle.js';
import type {
  BlockedRequest,
  BrowserSandbox,
  BrowserSession,
  FrameHandler,
  MouseButton,
  NavigationResult,
  Screencast,
  ScreencastOptions,
  Screenshot,
  ScreenshotOptions,
  SessionOptions,
} from './types.js';

export interface PlaywrightSandboxOptions {
  /** CHROMIUM_PATH; default: the system Chromium, else Playwright's own browser. */
  chromiumPath?: string;
  /** BROWSER_HOST_RULES, Chromium `--host-resolver-rules` syntax. Maps names, never allows. */
  hostRules?: string;
  logger: Logger;
  /** Default true; false shows the window (debugging on a desktop). */
  headless?: boolean;
}

const LAUNCH_TIMEOUT_MS = 30_000;
const NAVIGATION_TIMEOUT_MS = 30_000;
/** settle() never waits longer than this, whatever the page does. */
const SETTLE_CAP_MS = 2_000;
/** The network must be idle this long after an action (or its last request) to count as still. */
const QUIET_MS = 60;
/** Long-lived requests that never "finish": they must not hold settle() to its cap. */
const STREAMING_TYPES = new Set(['eventsource', 'websocket']);
const SYSTEM_CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function createPlaywrightSandbox(opts: PlaywrightSandboxOptions): BrowserSandbox {
  const { logger } = opts;
  const confinement = createConfinement({ logger, ...(opts.hostRules ? { hostRules: opts.hostRules } : {}) });
  const sessions = new Set<BrowserSession>();
  let launching: Promise<Browser> | undefined;
  let closing: Promise<void> | undefined;

  function launchArgs(): string[] {
    const confined = confinement.launchArgs();
    // Name → address mapping for development and tests; the allow-list still decides. When
    // the confinement sets its own resolver rules (ours plus a catch-all), those stand alone.
    const ownRules = opts.hostRules && !confined.some((a) => a.startsWith('--host-resolver-rules=')) ? [`--host-resolver-rules=${opts.hostRules}`] : [];
    return [
      // Background services (updates, sync, safe-browsing lists, field trials) would only
      // flood the confined network with refused connections and add noise to the logs.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // No first-run dialogs or default-browser prompts in a fresh profile.
      '--no-first-run',
      // Containers give /dev/shm 64 MB; shared memory there makes renderers crash on big pages.
      '--disable-dev-shm-usage',
      // A wheel click scrolls at once, so the screenshot after settle() shows the end position.
      '--disable-smooth-scrolling',
      ...ownRules,
      ...confined,
    ];
  }

  async function launch(): Promise<Browser> {
    const executablePath = resolveChromiumPath(opts.chromiumPath);
    // --no-sandbox only as root, where Chromium's sandbox cannot start: with chromiumSandbox
    // false Playwright passes that flag; as any other user the sandbox stays on.
    const asRoot = process.getuid?.() === 0;
    const browser = await chromium.launch({
      executablePath,
      headless: opts.headless ?? true,
      chromiumSandbox: !asRoot,
      args: launchArgs(),
      timeout: LAUNCH_TIMEOUT_MS,
      // The worker owns signal handling and closes the browser itself on shutdown.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    logger.info({ executablePath, version: browser.version() }, 'chromium started');
    browser.on('disconnected', () => {
      if (!closing) logger.warn({}, 'chromium disconnected');
    });
    return browser;
  }

  /** The running browser, launched if there is none or the last one died. */
  async function ensureBrowser(): Promise<Browser> {
    if (closing) throw new Error('the browser sandbox is closed');
    const current = launching;
    if (current) {
      const browser = await current.catch(() => undefined);
      if (browser?.isConnected()) return browser;
      // Failed or died: the first caller to notice starts a new one.
      if (launching === current) launching = undefined;
      return ensureBrowser();
    }
    const started = launch();
    launching = started;
    return started;
  }

  return {
    async openSession(options, signal) {
      signal.throwIfAborted();
      const browser = await ensureBrowser();
      const reports = blockReports(options.onBlocked);
      const guard = await confinement.openSessionGuard({ allowedDomains: options.allowedDomains, onBlocked: (event) => reports.report(event) });
      let context: BrowserContext | undefined;
      try {
        context = await browser.newContext({
          viewport: { ...options.viewport },
          deviceScaleFactor: 1,
          acceptDownloads: false,
          // Service workers could answer requests outside the reach of request interception.
          serviceWorkers: 'block',
          ...guard.contextOptions,
        });
        await guard.attach(context);
        await context.addInitScript(SETTLE_PROBE_SCRIPT);
        const page = await context.newPage();
        signal.throwIfAborted();
        const session = createSession({
          browser,
          context,
          page,
          guard,
          options,
          reports,
          logger: logger.child({ executionId: options.executionId }),
          onClosed: () => sessions.delete(session),
        });
        sessions.add(session);
        return session;
      } catch (error) {
        await context?.close().catch(() => undefined);
        await guard.close().catch(() => undefined);
        throw error;
      }
    },

    async checkReady(signal) {
      signal.throwIfAborted();
      const browser = await ensureBrowser();
      const context = await browser.newContext();
      await context.close();
    },

    close() {
      closing ??= (async () => {
        for (const session of [...sessions]) {
          await session.close().catch((error: unknown) => logger.warn({ err: String(error) }, 'session close failed'));
        }
        const browser = await launching?.catch(() => undefined);
        if (browser?.isConnected()) {
          await browser.close().catch((error: unknown) => logger.warn({ err: String(error) }, 'chromium close failed'));
          logger.info({}, 'chromium stopped');
        }
      })();
      return closing;
    },
  };
}

/** CHROMIUM_PATH, else the system Chromium, else Playwright's downloaded one. */
export function resolveChromiumPath(configured?: string): string {
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH ${configured} does not exist`);
    return configured;
  }
  const system = SYSTEM_CHROMIUM.find((p) => existsSync(p));
  if (system) return system;
  let bundled: string | undefined;
  try {
    bundled = chromium.executablePath();
  } catch {
    bundled = undefined;
  }
  if (bundled && existsSync(bundled)) return bundled;
  throw new Error(`no Chromium found: set CHROMIUM_PATH (tried ${[...SYSTEM_CHROMIUM, bundled ?? "Playwright's browser"].join(', ')})`);
}

interface SessionParts {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  guard: SessionGuard;
  options: SessionOptions;
  reports: BlockReports;
  logger: Logger;
  onClosed: () => void;
}

function createSession(parts: SessionParts): BrowserSession {
  const { browser, context, guard, options, logger } = parts;
  /** Open pages, oldest first; the agent acts on the newest. */
  const pages: Page[] = [];
  const cdpSessions = new Map<Page, Promise<CDPSession>>();
  const inflight = new Set<Request>();
  const networkListeners = new Set<() => void>();
  const activeListeners = new Set<() => void>();
  let pointer = { x: 0, y: 0 };
  let crashed = false;
  /** Main-frame navigations of any page so far; settle() watches it change. */
  let navigations = 0;
  /** When the network last started or finished a request, and when the agent last acted. */
  let lastNetworkAt = 0;
  let lastInputAt = 0;
  const input = <T>(fn: () => Promise<T>): Promise<T> => {
    lastInputAt = Date.now();
    return fn();
  };
  let closing: Promise<void> | undefined;

  const active = (): Page => pages[pages.length - 1] ?? parts.page;
  const notify = (listeners: Set<() => void>) => [...listeners].forEach((fn) => fn());
  const cdp = (page: Page): Promise<CDPSession> => {
    let session = cdpSessions.get(page);
    if (!session) {
      session = context.newCDPSession(page);
      cdpSessions.set(page, session);
    }
    return session;
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

  const adopt = (page: Page, opener = false) => {
    // The newest page is the one the agent acts on. A popup becomes it only once it has
    // committed an allowed document: one the confinement refuses is closed by it, and must
    // never receive the agent's keystrokes in the meantime.
    const promote = () => {
      if (pages.includes(page) || page.isClosed()) return;
      pages.push(page);
      notify(activeListeners);
    };
    // Playwright may announce a popup after its first document already committed.
    if (opener) pages.push(page);
    else if (/^https?:/i.test(page.url())) promote();
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) return;
      navigations++;
      // Only allowed http(s) documents can commit (the proxy and the guard refuse the rest);
      // error pages and about:blank do not make a popup the agent's page.
      if (/^https?:/i.test(frame.url())) promote();
    });
    page.on('crash', () => {
      if (page === active()) reportCrash(new Error('the page crashed'));
    });
    page.on('close', () => {
      const wasActive = page === active();
      const index = pages.indexOf(page);
      if (index >= 0) pages.splice(index, 1);
      cdpSessions.delete(page);
      for (const request of inflight) if (frameOwner(request) === page) inflight.delete(request);
      if (wasActive) notify(activeListeners);
    });
    if (opener) notify(activeListeners);
  };
  adopt(parts.page, true);
  context.on('page', (page) => {
    if (!closing) adopt(page);
  });
  const settled = (request: Request) => {
    if (!inflight.delete(request)) return;
    lastNetworkAt = Date.now();
    notify(networkListeners);
  };
  context.on('request', (request) => {
    if (STREAMING_TYPES.has(request.resourceType())) return;
    inflight.add(request);
    lastNetworkAt = Date.now();
    notify(networkListeners);
  });
  context.on('requestfinished', settled);
  context.on('requestfailed', settled);

  /**
   * Resolves once nothing is in flight and nothing started or ended for QUIET_MS, counted
   * from `sinceMs` at the earliest; or at the deadline.
   */
  const networkQuiet = (sinceMs: number, deadline: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(timer);
        networkListeners.delete(check);
        signal.removeEventListener('abort', finish);
        resolve();
      };
      function check() {
        clearTimeout(timer);
        const left = deadline - Date.now();
        if (left <= 0 || signal.aborted) return finish();
        if (inflight.size > 0) {
          timer = setTimeout(check, left);
          return;
        }
        // Idle since the later of the input and the last request event: a request the input
        // caused (a form post, a fetch) is announced within this window.
        const idleFor = Date.now() - Math.max(lastNetworkAt, sinceMs);
        if (idleFor >= QUIET_MS) return finish();
        timer = setTimeout(check, Math.min(QUIET_MS - idleFor, left));
      }
      networkListeners.add(check);
      signal.addEventListener('abort', finish, { once: true });
      check();
    });

  const session: BrowserSession = {
    viewport: { ...options.viewport },

    async navigate(url: string, signal: AbortSignal): Promise<NavigationResult> {
      const verdict = parts.reports.check(() => guard.checkUrl(url), { url, layer: 'navigate-tool' });
      if (!verdict.ok) {
        return { ok: false, url: session.currentUrl(), error: `navigation to ${url} refused: ${verdict.reason}` };
      }
      const page = active();
      lastInputAt = Date.now();
      // goto() takes no signal: stopping the load makes it fail fast instead.
      const stop = () => void cdp(page).then((c) => c.send('Page.stopLoading')).catch(() => undefined);
      signal.addEventListener('abort', stop, { once: true });
      try {
        await page.goto(url, { waitUntil: 'domcontentloaded', timeout: NAVIGATION_TIMEOUT_MS });
        return { ok: true, url: page.url() };
      } catch (error) {
        // A dead page or browser is an exception; a page that failed to load is an answer.
        if (page.isClosed() || !browser.isConnected()) throw error;
        return { ok: false, url: page.url(), error: firstLine(error) };
      } finally {
        signal.removeEventListener('abort', stop);
      }
    },

    currentUrl: () => active().url(),

    async mouseMove(x, y) {
      lastInputAt = Date.now();
      await active().mouse.move(x, y);
      pointer = { x, y };
    },
    async mouseDown(button) {
      lastInputAt = Date.now();
      await pressButton(active(), button, 'down', pointer);
    },
    async mouseUp(button) {
      lastInputAt = Date.now();
      await pressButton(active(), button, 'up', pointer);
    },
    async click(x, y, { button, clickCount }) {
      lastInputAt = Date.now();
      const page = active();
      if (isPlaywrightButton(button)) await page.mouse.click(x, y, { button, clickCount });
      else {
        await page.mouse.move(x, y);
        await pressButton(page, button, 'down', { x, y });
        await pressButton(page, button, 'up', { x, y });
      }
      pointer = { x, y };
    },
    async wheel(x, y, deltaX, deltaY) {
      lastInputAt = Date.now();
      const page = active();
      await page.mouse.move(x, y);
      pointer = { x, y };
      await page.mouse.wheel(deltaX, deltaY);
    },
    pointer: () => ({ ...pointer }),

    keyDown: (key) => input(() => active().keyboard.down(key)),
    keyUp: (key) => input(() => active().keyboard.up(key)),
    typeText: (text) => input(() => active().keyboard.type(text)),

    async screenshot(shot?: ScreenshotOptions): Promise<Screenshot> {
      const page = active();
      const client = await cdp(page);
      const params: { format: 'png'; optimizeForSpeed: boolean; clip?: { x: number; y: number; width: number; height: number; scale: number } } = {
        format: 'png',
        // Faster zlib settings: the PNG stays lossless, only a little larger.
        optimizeForSpeed: true,
      };
      if (shot?.clip || shot?.outputSize) {
        const region = shot.clip ?? { x: 0, y: 0, ...session.viewport };
        const scale = shot.outputSize ? shot.outputSize.width / region.width : 1;
        // CDP clips are in document coordinates: shift by how far the page is scrolled.
        const metrics = await client.send('Page.getLayoutMetrics');
        const { pageX, pageY } = metrics.cssVisualViewport;
        params.clip = { x: region.x + pageX, y: region.y + pageY, width: region.width, height: region.height, scale };
      }
      const { data } = await captureWithRetry(page, () => client.send('Page.captureScreenshot', params));
      const image = Buffer.from(data, 'base64');
      return { data: image, mediaType: 'image/png', ...pngSize(image) };
    },

    async settle(signal) {
      const deadline = Date.now() + SETTLE_CAP_MS;
      try {
        const page = active();
        const navigationsBefore = navigations;
        // Network and DOM quiet windows run side by side: a still page costs one window.
        const since = lastInputAt;
        const [, dom] = await Promise.all([networkQuiet(since, deadline, signal), pageStill(page, since, deadline)]);
        if (signal.aborted) return;
        const navigated = dom === 'destroyed' || navigations !== navigationsBefore || active() !== page;
        if (!navigated) return;
        // A navigation replaced the document (or a popup took over): let it load, then watch it.
        const current = active();
        const left = deadline - Date.now();
        if (left > 0 && !current.isClosed()) await current.waitForLoadState('load', { timeout: left }).catch(() => undefined);
        const loadedAt = Date.now();
        if (!signal.aborted) await Promise.all([networkQuiet(loadedAt, deadline, signal), pageStill(current, loadedAt, deadline)]);
      } catch (error) {
        logger.debug({ err: firstLine(error) }, 'settle ended early');
      }
    },

    startScreencast: (cast, onFrame) => startScreencast(cast, onFrame),

    close() {
      closing ??= (async () => {
        browser.off('disconnected', onDisconnected);
        for (const stop of [...screencasts]) await stop().catch(() => undefined);
        await context.close().catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'context close failed'));
        await guard.close().catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'confinement close failed'));
        parts.onClosed();
      })();
      return closing;
    },
  };

  const screencasts = new Set<() => Promise<void>>();

  /** Streams the active page; when another page becomes active, moves the stream there. */
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
    const attach = async (page: Page) => {
      const client = await cdp(page);
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
      current = { page, client, handler };
      await client.send('Page.startScreencast', { format: 'jpeg', quality: cast.quality, maxWidth: cast.maxWidth, maxHeight: cast.maxHeight, everyNthFrame: 1 });
    };
    const follow = () => {
      chain = chain.then(async () => {
        const page = active();
        if (stopped || current?.page === page) return;
        await detach();
        if (!page.isClosed() && !closing) await attach(page).catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'screencast could not follow the page'));
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

interface BlockReports {
  report(event: BlockedRequest): void;
  /** Runs a URL check and reports a refusal once, whether or not the check reported it. */
  check(run: () => { ok: true } | { ok: false; reason: string }, what: Omit<BlockedRequest, 'reason'>): { ok: true } | { ok: false; reason: string };
}

function blockReports(onBlocked: (event: BlockedRequest) => void): BlockReports {
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

/**
 * Chromium answers "Unable to capture screenshot" while a document has not produced its first
 * frame yet (just after a navigation commits). Waiting for the next animation frame and asking
 * again is enough; a third refusal is a real failure.
 */
async function captureWithRetry<T>(page: Page, capture: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await capture();
    } catch (error) {
      if (attempt >= 3 || !/Unable to capture screenshot/i.test(firstLine(error))) throw error;
      // Animation frames do not run in a page that is not rendering: bounded by a timer.
      await page
        .evaluate(() => new Promise((resolve) => {
          requestAnimationFrame(() => resolve(null));
          setTimeout(() => resolve(null), 100);
        }))
        .catch(() => undefined);
    }
  }
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

function frameOwner(request: Request): Page | undefined {
  try {
    return request.frame().page();
  } catch {
    // Service-worker requests have no frame.
    return undefined;
  }
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || png.toString('ascii', 12, 16) !== 'IHDR') throw new Error('not a PNG image');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** Width and height from a JPEG's start-of-frame marker; undefined if none is found. */
export function jpegSize(jpeg: Buffer): { width: number; height: number } | undefined {
  let offset = 2;
  while (offset + 9 < jpeg.length) {
    if (jpeg[offset] !== 0xff) return undefined;
    const marker = jpeg[offset + 1]!;
    const length = jpeg.readUInt16BE(offset + 2);
    // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: jpeg.readUInt16BE(offset + 5), width: jpeg.readUInt16BE(offset + 7) };
    }
    offset += 2 + length;
  }
  return undefined;
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
