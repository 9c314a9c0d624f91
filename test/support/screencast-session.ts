import { chromium, type Browser, type BrowserServer, type CDPSession, type Page } from 'playwright-core';
import { jpegSize } from '../../src/browser/playwright-tab.js';
import type { BrowserSession, FrameHandler, Screencast, ScreencastOptions, Size } from '../../src/browser/types.js';

/**
 * A test-only BrowserSession for the recorder's integration tests: real Chromium, and a CDP
 * `Page.startScreencast` whose frames are acknowledged when the handler's promise settles (as
 * the port promises). Only `viewport`, `startScreencast` and `close` work; the rest throw.
 */

export interface ScreencastHarness {
  session: BrowserSession;
  /** The page, for the test to drive. */
  page: Page;
  /** Kills the browser process (simulates a crash). */
  killBrowser(): void;
  /** Closes everything; idempotent. */
  close(): Promise<void>;
}

export const CHROMIUM_ARGS = [
  // Running as root in a container: Chromium's sandbox needs user namespaces we lack.
  '--no-sandbox',
  // The machine is offline: background fetches would only flood refused connections.
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Tests play videos without a user gesture.
  '--autoplay-policy=no-user-gesture-required',
];

export async function launchScreencastHarness(viewport: Size = { width: 640, height: 400 }): Promise<ScreencastHarness> {
  // A server (rather than launch) exposes the browser process, so a test can kill it.
  const server: BrowserServer = await chromium.launchServer({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  let browser: Browser | undefined;
  try {
    browser = await chromium.connect(server.wsEndpoint());
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const session = createSession(page, viewport);
    let closing: Promise<void> | undefined;
    return {
      session,
      page,
      killBrowser: () => void server.process().kill('SIGKILL'),
      close: () =>
        (closing ??= (async () => {
          await browser?.close().catch(() => undefined);
          await server.close().catch(() => undefined);
          // Wait for the browser process itself to be gone (kill() does not wait).
          const proc = server.process();
          if (proc.exitCode === null && proc.signalCode === null) {
            await new Promise<void>((resolve) => {
              proc.once('exit', () => resolve());
              proc.kill('SIGKILL');
            });
          }
        })()),
    };
  } catch (error) {
    await browser?.close().catch(() => undefined);
    await server.close();
    throw error;
  }
}

function createSession(page: Page, viewport: Size): BrowserSession {
  const unsupported = (name: string) => () => {
    throw new Error(`screencast test session: ${name} is not implemented`);
  };
  return {
    viewport,
    navigate: unsupported('navigate'),
    history: unsupported('history'),
    checkUrl: unsupported('checkUrl'),
    currentUrl: unsupported('currentUrl'),
    tabs: unsupported('tabs'),
    tab: unsupported('tab'),
    newTab: unsupported('newTab'),
    switchTab: unsupported('switchTab'),
    closeTab: unsupported('closeTab'),
    drainChanges: unsupported('drainChanges'),
    mouseMove: unsupported('mouseMove'),
    mouseDown: unsupported('mouseDown'),
    mouseUp: unsupported('mouseUp'),
    click: unsupported('click'),
    wheel: unsupported('wheel'),
    setInputFiles: unsupported('setInputFiles'),
    pendingFileChooser: unsupported('pendingFileChooser'),
    pointer: unsupported('pointer'),
    keyDown: unsupported('keyDown'),
    keyUp: unsupported('keyUp'),
    typeText: unsupported('typeText'),
    screenshot: unsupported('screenshot'),
    settle: unsupported('settle'),
    startScreencast: (options, onFrame) => startScreencast(page, options, onFrame),
    close: async () => {
      await page.context().close().catch(() => undefined);
    },
  };
}

async function startScreencast(page: Page, options: ScreencastOptions, onFrame: FrameHandler): Promise<Screencast> {
  const cdp: CDPSession = await page.context().newCDPSession(page);
  let stopped = false;
  cdp.on('Page.screencastFrame', (event) => {
    if (stopped) return;
    const data = Buffer.from(event.data, 'base64');
    const size = jpegSize(data);
    if (!size) throw new Error('screencast frame is not a JPEG with a frame header');
    // metadata.timestamp is seconds since the epoch, when Chromium painted the frame.
    const timestampMs = event.metadata.timestamp !== undefined ? event.metadata.timestamp * 1000 : Date.now();
    void Promise.resolve()
      .then(() => onFrame({ data, timestampMs, width: size.width, height: size.height }))
      .catch(() => undefined)
      .then(() => (stopped ? undefined : cdp.send('Page.screencastFrameAck', { sessionId: event.sessionId })))
      .catch(() => undefined); // the page or browser may be gone
  });
  await cdp.send('Page.startScreencast', { format: 'jpeg', quality: options.quality, maxWidth: options.maxWidth, maxHeight: options.maxHeight });
  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        stopped = true;
        await cdp.send('Page.stopScreencast').catch(() => undefined);
        await cdp.detach().catch(() => undefined);
      })()),
  };
}
