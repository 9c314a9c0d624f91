/**
 * One execution's browser session on Playwright: its context and pages (following allowed
 * popups), input, settling, screenshots and the screencast, all through the BrowserSession
 * port. Created by the sandbox (playwright-sandbox.ts), which owns the browser process.
 */
import { type Browser, type BrowserContext, type CDPSession, type Page, type Request } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import type { SessionGuard } from './confinement.js';
import type { DownloadTracker } from './downloads.js';
import type { FileChooserTracker } from './file-chooser.js';
import { KEYSTROKE_BATCH, keystrokesFor } from './keystrokes.js';
import { pageStill, withinMs } from './settle.js';
import type {
  BlockedRequest,
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


const NAVIGATION_TIMEOUT_MS = 30_000;
/** settle() never waits longer than this, whatever the page does. */
const SETTLE_CAP_MS = 2_000;
/** One screenshot attempt; a capture waiting on a frame that never comes is asked again. */
const CAPTURE_TIMEOUT_MS = 5_000;
/** After a request that started or ended since the action, the network must be idle this long. */
const QUIET_MS = 60;
/** Long-lived requests that never "finish": they must not hold settle() to its cap. */
const STREAMING_TYPES = new Set(['eventsource', 'websocket']);

export interface SessionParts {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  guard: SessionGuard;
  options: SessionOptions;
  reports: BlockReports;
  /** File choosers and inputs of the context's pages (file-chooser.ts). */
  files: FileChooserTracker;
  /** Present when the session saves downloads (downloads.ts). */
  downloads?: DownloadTracker;
  logger: Logger;
  onClosed: () => void;
}

export function createSession(parts: SessionParts): BrowserSession {
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
  let closing: Promise<void> | undefined;
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
      // The first page closing, or the browser going away, ends the session: that is thrown.
      if (page === parts.page || closing || !browser.isConnected() || !(await closedUnderInput(page, error))) throw error;
      logger.debug({ err: firstLine(error) }, 'the popup closed under the input; acting on the page below');
    }
  };

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
   * Resolves once nothing is in flight and, when a request started or ended after `sinceMs`,
   * QUIET_MS passed since the last one; or at the deadline.
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
        // No request since the input: nothing to wait for. Requests the input caused are seen
        // by the page check first (fetch, XHR, a form or link navigation), which runs before
        // this one; a request that ended lately leaves the page a moment to show its answer.
        if (lastNetworkAt < sinceMs) return finish();
        const idleFor = Date.now() - lastNetworkAt;
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
      input(async (page) => {
        // All of a batch's key events at once; CDP keeps them in order (see keystrokes.ts).
        const client = await cdp(page);
        const commands = keystrokesFor(text);
        for (let i = 0; i < commands.length; i += KEYSTROKE_BATCH) {
          await Promise.all(commands.slice(i, i + KEYSTROKE_BATCH).map((c) => client.send(c.method, c.params)));
        }
      }),

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
      const { data } = await captureWithRetry(page, () => withinMs(CAPTURE_TIMEOUT_MS, client.send('Page.captureScreenshot', params)));
      const image = Buffer.from(data, 'base64');
      return { data: image, mediaType: 'image/png', ...pngSize(image) };
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
        await networkQuiet(since, deadline, signal);
        if (signal.aborted) return;
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
        await networkQuiet(loadedAt, deadline, signal);
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

/**
 * Chromium answers "Unable to capture screenshot" while a document has not produced its first
 * frame yet (just after a navigation commits), and may not answer at all while a navigation is
 * pending. Waiting for the next animation frame and asking again is enough; a third failure is
 * a real one.
 */
async function captureWithRetry<T>(page: Page, capture: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await capture();
    } catch (error) {
      if (attempt >= 3 || !/Unable to capture screenshot|no answer from the page/i.test(firstLine(error))) throw error;
      // Animation frames do not run in a page that is not rendering, and a document being
      // replaced may not run the evaluation at all: both waits are bounded.
      await withinMs(
        1_000,
        page.evaluate(() => new Promise((resolve) => {
          requestAnimationFrame(() => resolve(null));
          setTimeout(() => resolve(null), 100);
        })),
      ).catch(() => undefined);
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

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}

