/**
 * The browser port on Playwright + Chromium: one Chromium per sandbox (launched on first use,
 * launched again if it died), one fresh BrowserContext per session, confined to the session's
 * allow-list by the confinement layer. Screenshots and the screencast go straight to CDP: it is
 * the fastest path and lets zoom render a region at a higher scale instead of upscaling pixels.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import type { Logger, Tracing } from '../telemetry/types.js';
import { disableFeaturesSwitch } from './chromium-features.js';
import { createConfinement } from './confinement.js';
import { attachDownloads, type DownloadTracker } from './downloads.js';
import { attachFileChoosers } from './file-chooser.js';
import { blockReports } from './block-reports.js';
import { cancellable } from '../domain/cancel.js';
import { createHostMatcher } from './host-matcher.js';
import { createSession } from './playwright-session.js';
import { allowedState, readAllowedState, watchSignIn } from './profile-state.js';
import { SETTLE_PROBE_SOURCE } from './page-scripts.generated.js';
import type { BrowserSandbox, BrowserSession, DownloadEvent, SessionOptions } from './types.js';

export interface PlaywrightSandboxOptions {
  /** CHROMIUM_PATH; default: the system's headless shell, else its Chromium, else Playwright's own browser. */
  chromiumPath?: string;
  /** BROWSER_HOST_RULES, Chromium `--host-resolver-rules` syntax. Maps names, never allows. */
  hostRules?: string;
  logger: Logger;
  /** Default true; false shows the window (debugging on a desktop). */
  headless?: boolean;
  /** Each settle wait is a span of the execution's trace (docs/operations.md#traces). */
  tracing?: Tracing;
}

const LAUNCH_TIMEOUT_MS = 30_000;

/** True when Chromium's own sandbox cannot run (the worker is root) and is turned off. */
export function chromiumSandboxDisabled(): boolean {
  return process.getuid?.() === 0;
}

/**
 * The variables Chromium is started with: where to find programs, fonts, the display and a
 * temporary folder, the locale and time zone. Nothing else of the worker's environment (API
 * keys, AWS credentials, Redis URLs) reaches the browser's processes.
 */
const BROWSER_ENV_NAMES = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LANGUAGE', 'LC_ALL', 'TZ', 'DISPLAY', 'XAUTHORITY', 'WAYLAND_DISPLAY', 'XDG_RUNTIME_DIR', 'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'FONTCONFIG_PATH', 'FONTCONFIG_FILE'];

export function browserEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of BROWSER_ENV_NAMES) {
    const value = env[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}
/**
 * The headless shell first (Debian's `chromium-headless-shell`, Playwright's own default for
 * headless): Chromium's content layer without the browser's UI. Each context of full Chromium
 * is a browser window with its toolbar, address-bar popups and profile services, which nobody
 * sees headless: the shell runs an execution on about half the CPU (bench -- throughput), and
 * sends none of the browser's own background requests (autofill queries, captive-portal
 * probes after a certificate error). Full Chromium is the fallback, and the choice for a window.
 */
const SYSTEM_HEADLESS_SHELL = ['/usr/bin/chromium-headless-shell'];
const SYSTEM_CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function createPlaywrightSandbox(opts: PlaywrightSandboxOptions): BrowserSandbox {
  const { logger } = opts;
  const confinement = createConfinement({ logger, ...(opts.hostRules ? { hostRules: opts.hostRules } : {}) });
  const sessions = new Set<BrowserSession>();
  let launching: Promise<Browser> | undefined;
  let closing: Promise<void> | undefined;
  /** Each browser's downloads folder, where Chromium writes downloads as their bytes arrive. */
  const stagingDirs = new WeakMap<Browser, string>();

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
      // Chromium's log on stderr at errors and worse only. At info level the headless shell writes
      // every console line of every page there, and Playwright keeps the last lines of that
      // output, shared by every execution on this browser, whole: a page logging lines of
      // megabytes grew the worker by gigabytes and made it crash when the browser went away
      // (docs/security.md#limits).
      '--enable-logging=stderr',
      '--log-level=2',
      // Replaces Playwright's own switch (Chromium keeps the last one): see chromium-features.ts.
      disableFeaturesSwitch(),
      ...ownRules,
      ...confined,
    ];
  }

  async function launch(): Promise<Browser> {
    const executablePath = resolveChromiumPath(opts.chromiumPath, opts.headless ?? true);
    // --no-sandbox only as root, where Chromium's sandbox cannot start: with chromiumSandbox
    // false Playwright passes that flag; as any other user the sandbox stays on. The composition
    // says so at start (a warning and a metric): docs/operations.md#browser-sandbox.
    const sandboxed = !chromiumSandboxDisabled();
    // Our own folder rather than Playwright's hidden one: downloads.ts watches it to stop a
    // download as it passes the size limit, whichever page started it.
    const stagingDir = mkdtempSync(path.join(os.tmpdir(), 'ew-chromium-downloads-'));
    const removeStaging = () => rmSync(stagingDir, { recursive: true, force: true });
    let browser: Browser;
    try {
      browser = await chromium.launch({
        executablePath,
        downloadsPath: stagingDir,
        headless: opts.headless ?? true,
        chromiumSandbox: sandboxed,
        // The page's process holds none of the worker's keys: only what Chromium needs to run.
        env: browserEnvironment(process.env),
        args: launchArgs(),
        timeout: LAUNCH_TIMEOUT_MS,
        // The worker owns signal handling and closes the browser itself on shutdown.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
    } catch (error) {
      removeStaging();
      throw error;
    }
    stagingDirs.set(browser, stagingDir);
    logger.info({ executablePath, version: browser.version(), sandbox: sandboxed }, 'chromium started');
    browser.on('disconnected', () => {
      removeStaging();
      if (!closing) logger.warn({}, 'chromium disconnected');
    });
    return browser;
  }

  /** The running browser, launched if there is none or the last one died. */
  async function ensureBrowser(): Promise<Browser> {
    if (closing) throw new Error('the browser sandbox is closed');
    const current = launching;
    if (current) {
      // A launch that failed was reported to its own caller; this one launches again.
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

  /** One session on `browser`: its context, what watches it, its first page. */
  async function openOn(browser: Browser, options: SessionOptions, signal: AbortSignal): Promise<BrowserSession> {
    const reports = blockReports(options.onBlocked);
    const guard = await confinement.openSessionGuard({ allowedDomains: options.allowedDomains, onBlocked: (event) => reports.report(event) });
    let context: BrowserContext | undefined;
    let downloads: DownloadTracker | undefined;
    const sessionLogger = logger.child({ executionId: options.executionId });
    // A profile's state (docs/profiles.md) of allowed hosts only, in and out.
    const matcher = createHostMatcher(options.allowedDomains);
    try {
      context = await browser.newContext({
        viewport: { ...options.viewport },
        deviceScaleFactor: 1,
        acceptDownloads: false,
        // Service workers could answer requests outside the reach of request interception.
        serviceWorkers: 'block',
        ...guard.contextOptions,
        // Downloads from allowed hosts are saved (docs/files-and-codes.md); the guard refuses the rest.
        ...(options.downloads ? { acceptDownloads: true } : {}),
        ...(options.storageState ? { storageState: allowedState(options.storageState, matcher) } : {}),
      });
      const signIn = options.watchSignIn ? watchSignIn(context) : undefined;
      // Download events go to the runner and, once the session exists, into its change log
      // (the browser toolset reports them in browser_state).
      const downloadRelay: { listener?: (event: DownloadEvent) => void } = {};
      if (options.downloads) {
        const { onDownload } = options;
        // The run's signal: a run stopped from outside gives its downloads no grace.
        const stagingDir = stagingDirs.get(browser);
        downloads = attachDownloads(context, {
          ...options.downloads,
          ...(stagingDir ? { stagingDir } : {}),
          signal,
          onEvent: (event) => {
            onDownload?.(event);
            downloadRelay.listener?.(event);
          },
          logger: sessionLogger,
        });
      }
      const files = attachFileChoosers(context, { files: options.inputFiles ?? [], logger: sessionLogger, ...(options.onFileChooser ? { onOpened: options.onFileChooser } : {}) });
      const tracker = downloads;
      await guard.attach(context, tracker ? { onDownload: (download) => tracker.accept(download) } : {});
      // The settle probe (page/settle-probe.ts, read by settle.ts) runs before the page's scripts in
      // every frame and answers, for a moment since an input, what is still under way there:
      // timers, requests, a navigation, a file chooser or a popup the page asked for.
      await context.addInitScript(SETTLE_PROBE_SOURCE);
      const page = await context.newPage();
      signal.throwIfAborted();
      const session = createSession({
        browser,
        context,
        page,
        guard,
        options,
        reports,
        files,
        ...(downloads ? { downloads } : {}),
        downloadRelay,
        logger: sessionLogger,
        ...(opts.tracing ? { tracing: opts.tracing } : {}),
        onClosed: () => sessions.delete(session),
      });
      const profiled = context;
      // Reading a context's state cannot be cancelled; it reads the browser's cookie jar and each
      // allowed origin's storage, and ends on its own: on abort the call stops waiting for it.
      session.storageState = (signal) => cancellable(signal, () => readAllowedState(profiled, matcher));
      if (signIn) session.signInSeen = () => signIn.seen();
      session.memoryBytes = pageMemory(profiled);
      sessions.add(session);
      return session;
    } catch (error) {
      // The first error goes to the caller; the rest are logged.
      const undone = (what: string) => (failure: unknown) => logger.warn({ err: String(failure) }, `${what} failed after a session could not open`);
      await downloads?.close().catch(undone('closing its downloads'));
      await context?.close().catch(undone('closing its context'));
      await guard.close().catch(undone('closing its guard'));
      throw error;
    }
  }

  return {
    async openSession(options, signal) {
      signal.throwIfAborted();
      const browser = await ensureBrowser();
      try {
        return await openOn(browser, options, signal);
      } catch (error) {
        // A browser killed just before (its process gone, the end of its pipe not yet read) still
        // looked alive to ensureBrowser(), and the session failed with it: opened once more, on a
        // new browser. A failure while the browser is still connected is the session's own.
        if (signal.aborted || closing || browser.isConnected()) throw error;
        logger.warn({ err: String(error) }, 'a session failed on a browser that had gone; opening it on a new one');
        return openOn(await ensureBrowser(), options, signal);
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
          await session.close().catch((error: unknown) => logger.warn({ err: error }, 'session close failed'));
        }
        // A launch that failed left no browser to close (its caller was told).
        const browser = await launching?.catch(() => undefined);
        if (browser?.isConnected()) {
          await browser.close().catch((error: unknown) => logger.warn({ err: error }, 'chromium close failed'));
          logger.info({}, 'chromium stopped');
        }
      })();
      return closing;
    },
  };
}

/** How long one page may take to answer a memory sample before it counts with what it last held. */
const MEMORY_SAMPLE_TIMEOUT_MS = 2_000;

/**
 * What a context's pages hold, in bytes: `Runtime.getHeapUsage` of each page target (the V8 heap's
 * used size, the DOM's garbage-collected heap, array buffers and external strings). Asked of each
 * page of this context only, it is this execution's and no other's, whatever processes Chromium
 * gives its pages (docs/security.md#browser-memory). A page answers on its main thread: one that
 * is busy (a script that does not yield) counts with what it last answered, and is not asked
 * again until that answer arrives, so unanswered questions never pile up.
 *
 * The heap a page reports is its V8 isolate's, and pages of one site opened from each other
 * (popups) share one: each answer is kept with its isolate's id, and an isolate counts once,
 * however many pages it serves (40 popups of one page counted 40 times were 1.3 GB of 32 MB).
 */
function pageMemory(context: BrowserContext): (signal: AbortSignal) => Promise<number> {
  type Probe = { cdp: Promise<CDPSession>; isolate?: string; last: number; asking?: Promise<void> };
  const probes = new WeakMap<Page, Probe>();
  const probeOf = (page: Page) => {
    let probe = probes.get(page);
    if (!probe) {
      const cdp = context.newCDPSession(page);
      cdp.catch(() => undefined);
      probe = { cdp, last: 0 };
      probes.set(page, probe);
    }
    return probe;
  };
  const ask = (probe: Probe) => {
    probe.asking ??= probe.cdp
      .then((cdp) => Promise.all([cdp.send('Runtime.getIsolateId'), cdp.send('Runtime.getHeapUsage')]))
      .then(([{ id }, heap]) => {
        probe.isolate = id;
        probe.last = heap.usedSize + heap.embedderHeapUsedSize + heap.backingStorageSize;
      })
      // A page that closed meanwhile holds nothing more; the next sample no longer sees it.
      .catch(() => undefined)
      .finally(() => {
        probe.asking = undefined;
      });
    return probe.asking;
  };
  return async (signal) => {
    signal.throwIfAborted();
    const open = context.pages().filter((page) => !page.isClosed()).map(probeOf);
    const answered = AbortSignal.any([signal, AbortSignal.timeout(MEMORY_SAMPLE_TIMEOUT_MS)]);
    // Waiting stops at the timeout or the run's end; the question itself stays asked (see above).
    await cancellable(answered, () => Promise.all(open.map(ask))).catch(() => undefined);
    signal.throwIfAborted();
    // One figure per isolate (its latest answer's): pages sharing one share its heap. A page that
    // has not answered yet has no isolate known and holds nothing counted yet.
    const isolates = new Map<string, number>();
    for (const probe of open) if (probe.isolate !== undefined) isolates.set(probe.isolate, Math.max(isolates.get(probe.isolate) ?? 0, probe.last));
    return [...isolates.values()].reduce((sum, bytes) => sum + bytes, 0);
  };
}

/** CHROMIUM_PATH, else the system's headless shell (headless only), else its Chromium, else Playwright's downloaded one. */
export function resolveChromiumPath(configured?: string, headless = true): string {
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH ${configured} does not exist`);
    return configured;
  }
  const system = [...(headless ? SYSTEM_HEADLESS_SHELL : []), ...SYSTEM_CHROMIUM].find((p) => existsSync(p));
  if (system) return system;
  let bundled: string | undefined;
  try {
    bundled = chromium.executablePath();
  } catch {
    bundled = undefined;
  }
  if (bundled && existsSync(bundled)) return bundled;
  throw new Error(`no Chromium found: set CHROMIUM_PATH (tried ${[...(headless ? SYSTEM_HEADLESS_SHELL : []), ...SYSTEM_CHROMIUM, bundled ?? "Playwright's browser"].join(', ')})`);
}

