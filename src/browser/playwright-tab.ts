/**
 * One tab of a session on Playwright: its page, the structure the agent reads and targets
 * (page-structure.ts), its console and network logs, screenshots and script evaluation. The
 * session (playwright-session.ts) keeps the tabs, decides which one is active and sends input.
 */
import { randomUUID } from 'node:crypto';
import type { CDPSession, ConsoleMessage, ElementHandle, Page, Request, Response } from 'playwright-core';
import { createPageStructure } from './frame-structure.js';
import { staleRefError } from './page-structure.js';
import { cancellable } from '../domain/cancel.js';
import { terminateScripts } from './cancellable.js';
import type { ConsoleBudget } from './page-limits.js';
import { withinMs } from './settle.js';
import { VALUE_TEXT_FUNCTION } from './page-scripts.generated.js';
import type { BrowserTab, ConsoleEntry, FileInputResult, LimitReached, NetworkEntry, PageLimits, Screenshot, ScreenshotOptions, StructureResult } from './types.js';

/** One screenshot attempt; a capture waiting on a frame that never comes is asked again. */
const CAPTURE_TIMEOUT_MS = 5_000;
/** Network entries kept per tab between two reads (the oldest go first). */
const NETWORK_ENTRIES_MAX = 300;
const JPEG_QUALITY = 80;

export interface PlaywrightTab extends BrowserTab {
  readonly page: Page;
  readonly cdp: () => Promise<CDPSession>;
  /** Stops listening; the page itself is closed by its owner. */
  dispose(): void;
}

export interface TabParts {
  /** The session's file chooser tracker: the only way a file reaches a page. */
  setFilesOn(element: ElementHandle, names: readonly string[]): Promise<FileInputResult>;
  /** Answers the file chooser the page opened, if one is pending. */
  setFilesToChooser(names: readonly string[]): Promise<FileInputResult> | undefined;
  /**
   * The session's console limits (docs/security.md#limits): each line cut to
   * `consoleLineMaxChars`, `consoleEntriesMax` entries kept, and the bytes of every tab's kept
   * lines within `budget`; `reached` tells a limit (once per tab, the reporter sees to it).
   */
  console: Pick<PageLimits, 'consoleLineMaxChars' | 'consoleEntriesMax'> & { budget: ConsoleBudget; reached: (scope: string, reached: LimitReached) => void };
}

/** The attribute that marks an element for a moment so that the page's world can find it. */
const MARK = 'data-execution-worker-target';

export function createPlaywrightTab(id: string, page: Page, parts: TabParts): PlaywrightTab {
  let cdpSession: Promise<CDPSession> | undefined;
  const cdp = (): Promise<CDPSession> => {
    cdpSession ??= page.context().newCDPSession(page);
    return cdpSession;
  };
  const structure = createPageStructure(page, cdp);
  const networkLog: NetworkEntry[] = [];
  const started = new WeakMap<Request, number>();
  const answered = new WeakSet<Request>();
  const keep = (entry: NetworkEntry) => {
    networkLog.push(entry);
    if (networkLog.length > NETWORK_ENTRIES_MAX) networkLog.splice(0, networkLog.length - NETWORK_ENTRIES_MAX);
  };
  const pageConsole = createTabConsole(id, parts.console);

  const forget = forgetPlaywrightLogs(page);
  // The page's own lines: Chromium's verbose advice ("Input elements should have autocomplete…") is not.
  const onConsole = (message: ConsoleMessage) => {
    forget.console();
    // The page's values behind the line are not kept: the text is all the worker reads.
    for (const arg of message.args()) arg.dispose().catch(() => undefined);
    const level: string = message.type();
    if (level === 'verbose' || level === 'debug') return;
    pageConsole.add(level, message.text());
  };
  const onPageError = (error: Error) => {
    forget.errors();
    pageConsole.add('error', `uncaught ${error.name}: ${error.message}`);
  };
  const onRequest = (request: Request) => started.set(request, Date.now());
  // Logged when the answer's head arrives: a body the page never reads may never finish.
  const onResponse = (response: Response) => {
    const request = response.request();
    answered.add(request);
    const at = started.get(request) ?? Date.now();
    keep({
      method: request.method(),
      url: request.url(),
      status: response.status(),
      ...(response.headers()['content-type'] ? { mimeType: response.headers()['content-type']!.split(';')[0]!.trim() } : {}),
      durationMs: Date.now() - at,
      atMs: at,
    });
  };
  const onFailed = (request: Request) => {
    if (answered.has(request)) return;
    const at = started.get(request) ?? Date.now();
    const reason = request.failure()?.errorText ?? 'failed';
    keep({
      method: request.method(),
      url: request.url(),
      failure: /BLOCKED_BY_CLIENT|blockedbyclient/i.test(reason) ? 'refused: outside the allow-list' : reason,
      durationMs: Date.now() - at,
      atMs: at,
    });
  };
  page.on('console', onConsole);
  page.on('pageerror', onPageError);
  page.on('request', onRequest);
  page.on('response', onResponse);
  page.on('requestfailed', onFailed);

  /**
   * A read or an action of the worker's script runs in the page's renderer, behind whatever the
   * page's own scripts are doing: when the run stops, the script running there is terminated.
   * A frame of another site in a process of its own (frame-structure.ts) is not reached by it:
   * its part of a read is dropped, and ends when the session closes right after.
   */
  const read = <T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> => cancellable(signal, work, terminateScripts(cdp));

  const setFiles = async (ref: string, names: readonly string[], signal: AbortSignal): Promise<FileInputResult> => {
    // The reference lives in the worker's isolated world; Playwright's handles in the page's.
    // A one-off attribute carries the element across, and is removed at once.
    const token = randomUUID();
    if (!(await structure.mark(ref, MARK, token))) return { ok: false, error: staleRefError(ref, 'removed') };
    let handle: ElementHandle | null = null;
    try {
      signal.throwIfAborted();
      handle = await page.$(`[${MARK}="${token}"]`);
      if (!handle) return { ok: false, error: staleRefError(ref, 'removed') };
      signal.throwIfAborted();
      const given = await parts.setFilesOn(handle, names);
      // The upload button of a styled control is not the input; the chooser it opened is.
      if (!given.ok && /not a file input/.test(given.error)) return (await parts.setFilesToChooser(names)) ?? given;
      return given;
    } finally {
      // A handle whose document is gone is released with it.
      await handle?.dispose().catch(() => undefined);
      await structure.mark(ref, MARK, null).catch(() => false);
    }
  };

  const tab: PlaywrightTab = {
    id,
    page,
    cdp,
    url: () => page.url(),
    // A title is read in the page's world too: bounded, and an empty one when the page is slow.
    title: (signal) =>
      read(signal, () => withinMs(2_000, page.title())).catch((error: unknown) => {
        if (signal.aborted) throw error;
        return '';
      }),
    readPage: (options, signal) => read(signal, () => structure.readPage(options)),
    find: (rank, limit, signal) => read(signal, () => structure.find(rank, limit)),
    pageText: (maxChars, signal) => read(signal, () => structure.pageText(maxChars)),
    contentDigest: (signal) => read(signal, () => structure.contentDigest()),
    pointOf: (ref, signal) => read(signal, () => structure.pointOf(ref)),
    setValue: (ref, value, signal) => read(signal, () => structure.setValue(ref, value)),
    scrollTo: (ref, signal) => read(signal, () => structure.scrollTo(ref)),
    identify: (ref, signal) => read(signal, () => structure.identify(ref)),
    identifyAt: (point, signal) => read(signal, () => structure.identifyAt(point)),
    locate: (identity, signal) => read(signal, () => structure.locate(identity)),
    focused: (signal) => read(signal, () => structure.focused()),
    focus: (ref, signal) => read(signal, () => structure.focus(ref)),
    hideText: (ref, signal, shownAs) => read(signal, () => structure.hideText(ref, shownAs)),
    describe: (ref, signal) => read(signal, () => structure.describe(ref)),
    widget: (ref, signal) => read(signal, () => structure.widget(ref)),
    popupOptions: (ref, signal) => read(signal, () => structure.popupOptions(ref)),
    calendar: (signal) => read(signal, () => structure.calendar()),
    evaluate: (expression, timeoutMs, signal) => read(signal, () => evaluateInPage(cdp, expression, timeoutMs)),
    setFiles: (ref, names, signal) => read(signal, () => setFiles(ref, names, signal)),
    drainConsole: () => pageConsole.drain(),
    drainNetwork: () => networkLog.splice(0),
    screenshot: (options, signal) => screenshotOf(page, cdp, options, signal),
    dispose() {
      page.off('console', onConsole);
      page.off('pageerror', onPageError);
      page.off('request', onRequest);
      page.off('response', onResponse);
      page.off('requestfailed', onFailed);
      pageConsole.drop();
    },
  };
  return tab;
}

/** A line cut to `maxChars` characters, `…` at the end when it was longer. */
export function cutLine(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * One tab's console as the worker keeps it between two reads, within the limits: lines cut as
 * they are captured, the oldest entries going first past the count, and a line that does not fit
 * the session's byte budget dropped. What was dropped is counted, and the next read says so.
 */
export function createTabConsole(tabId: string, limits: TabParts['console']) {
  const { consoleLineMaxChars, consoleEntriesMax, budget, reached } = limits;
  const entries: Array<ConsoleEntry & { bytes: number }> = [];
  let droppedOverBudget = 0;
  let droppedOldest = 0;
  return {
    add(level: string, raw: string): void {
      const text = cutLine(raw, consoleLineMaxChars);
      if (text !== raw) reached(tabId, { limit: 'CONSOLE_LINE_MAX_CHARS', max: consoleLineMaxChars, value: raw.length, unit: 'chars', action: 'cut', detail: `a console line of ${tabId} was cut` });
      const bytes = Buffer.byteLength(text);
      if (!budget.take(bytes)) {
        droppedOverBudget++;
        reached('session', { limit: 'CONSOLE_BYTES_MAX', max: budget.maxBytes, value: budget.heldBytes + bytes, unit: 'bytes', action: 'cut', detail: 'console lines past the budget are dropped until read_console reads the kept ones' });
        return;
      }
      entries.push({ level, text, atMs: Date.now(), bytes });
      if (entries.length > consoleEntriesMax) {
        const gone = entries.splice(0, entries.length - consoleEntriesMax);
        for (const entry of gone) budget.release(entry.bytes);
        droppedOldest += gone.length;
        reached(tabId, { limit: 'CONSOLE_ENTRIES_MAX', max: consoleEntriesMax, value: consoleEntriesMax + gone.length, unit: 'entries', action: 'cut', detail: `the oldest console entries of ${tabId} were dropped` });
      }
    },
    /** The entries since the last read, a note first when lines were dropped; their bytes go back to the budget. */
    drain(): ConsoleEntry[] {
      const out: ConsoleEntry[] = entries.splice(0).map(({ bytes, ...entry }) => {
        budget.release(bytes);
        return entry;
      });
      const notes: ConsoleEntry[] = [];
      if (droppedOverBudget > 0) notes.push({ level: 'worker', text: `${droppedOverBudget} console lines were dropped: the execution keeps at most ${budget.maxBytes} bytes of console at once (CONSOLE_BYTES_MAX); read_console more often to keep more`, atMs: Date.now() });
      if (droppedOldest > 0) notes.push({ level: 'worker', text: `${droppedOldest} older console entries were dropped: a tab keeps at most ${consoleEntriesMax} between two reads (CONSOLE_ENTRIES_MAX)`, atMs: Date.now() });
      droppedOverBudget = 0;
      droppedOldest = 0;
      return [...notes, ...out];
    },
    /** The tab closed: what it held goes back to the budget. */
    drop(): void {
      for (const entry of entries.splice(0)) budget.release(entry.bytes);
    },
  };
}

/**
 * Playwright keeps the last 200 console messages and 200 errors of every page, whole, until the
 * page closes, whether anyone listens or not (for `page.consoleMessages()`, which the worker does
 * not use): 200 lines of 4 MB held 800 MB of the worker's heap for as long as the flooding page
 * stayed open (measured with a heap snapshot). The worker has its own bounded copy, so each
 * message is forgotten there as soon as it arrives; one clear at a time, the next one after it.
 */
function forgetPlaywrightLogs(page: Page): { console(): void; errors(): void } {
  const clearer = (clear: () => Promise<void>) => {
    let running = false;
    let again = false;
    const run = (): void => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      clear()
        .catch(() => undefined)
        .finally(() => {
          running = false;
          if (again && !page.isClosed()) {
            again = false;
            run();
          }
        });
    };
    return run;
  };
  return { console: clearer(() => page.clearConsoleMessages()), errors: clearer(() => page.clearPageErrors()) };
}

/**
 * A screenshot of the tab's viewport (or a region of it), straight from CDP. A capture cannot be
 * cancelled in Chromium: on abort the call rejects at once and the capture, bounded by
 * CAPTURE_TIMEOUT_MS, ends on its own (its picture is dropped).
 */
export function screenshotOf(page: Page, cdp: () => Promise<CDPSession>, shot: ScreenshotOptions, signal: AbortSignal): Promise<Screenshot> {
  return cancellable(signal, () => capture(page, cdp, shot, signal));
}

async function capture(page: Page, cdp: () => Promise<CDPSession>, shot: ScreenshotOptions, signal: AbortSignal): Promise<Screenshot> {
  const client = await cdp();
  const jpeg = shot.format === 'jpeg';
  const params: {
    format: 'png' | 'jpeg';
    quality?: number;
    optimizeForSpeed: boolean;
    clip?: { x: number; y: number; width: number; height: number; scale: number };
  } = {
    format: jpeg ? 'jpeg' : 'png',
    ...(jpeg ? { quality: shot.quality ?? JPEG_QUALITY } : {}),
    // Faster zlib settings: the PNG stays lossless, only a little larger.
    optimizeForSpeed: true,
  };
  if (shot.clip || shot.outputSize) {
    const viewport = page.viewportSize() ?? { width: 1280, height: 800 };
    const region = shot.clip ?? { x: 0, y: 0, ...viewport };
    const scale = shot.outputSize ? shot.outputSize.width / region.width : 1;
    // CDP clips are in document coordinates: shift by how far the page is scrolled.
    const metrics = (await client.send('Page.getLayoutMetrics')) as { cssVisualViewport: { pageX: number; pageY: number } };
    const { pageX, pageY } = metrics.cssVisualViewport;
    params.clip = { x: region.x + pageX, y: region.y + pageY, width: region.width, height: region.height, scale };
  }
  const { data } = (await captureWithRetry(page, signal, () => withinMs(CAPTURE_TIMEOUT_MS, client.send('Page.captureScreenshot', params)))) as { data: string };
  const image = Buffer.from(data, 'base64');
  const size = jpeg ? jpegSize(image) : pngSize(image);
  if (!size) throw new Error('the browser returned an unreadable screenshot');
  return { data: image, mediaType: jpeg ? 'image/jpeg' : 'image/png', ...size };
}

/**
 * Chromium answers "Unable to capture screenshot" while a document has not produced its first
 * frame yet (just after a navigation commits), and may not answer at all while a navigation is
 * pending. Waiting for the next animation frame and asking again is enough; a third failure is
 * a real one.
 */
async function captureWithRetry<T>(page: Page, signal: AbortSignal, capture: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await capture();
    } catch (error) {
      if (attempt >= 3 || signal.aborted || !/Unable to capture screenshot|no answer from the page/i.test(firstLine(error))) throw error;
      // Animation frames do not run in a page that is not rendering, and a document being
      // replaced may not run the evaluation at all: both waits are bounded. A wait that fails
      // changes nothing: the capture is asked again, and its third failure is the one reported.
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

/**
 * javascript_exec: the expression runs in the page's own world, with its authority, as a user
 * gesture; its value comes back as text (JSON where it can be, else the value's description).
 */
async function evaluateInPage(cdp: () => Promise<CDPSession>, expression: string, timeoutMs: number): Promise<StructureResult<string>> {
  const client = await cdp();
  type Remote = { type: string; subtype?: string; value?: unknown; description?: string; objectId?: string; unserializableValue?: string };
  const reply = (await withinMs(
    timeoutMs + 500,
    client.send('Runtime.evaluate', { expression, awaitPromise: true, userGesture: true, returnByValue: false, timeout: timeoutMs, replMode: true }),
    () => new Error(`the script did not finish within ${Math.round(timeoutMs / 1000)} s`),
  )) as { result: Remote; exceptionDetails?: { exception?: { description?: string }; text?: string } };
  if (reply.exceptionDetails) {
    const text = reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text ?? 'the script threw';
    return { ok: false, error: text.split('\n')[0] ?? text };
  }
  const result = reply.result;
  if (result.type === 'undefined') return { ok: true, value: 'undefined' };
  if (result.unserializableValue !== undefined) return { ok: true, value: result.unserializableValue };
  if (result.objectId === undefined) return { ok: true, value: typeof result.value === 'string' ? result.value : JSON.stringify(result.value) };
  if (result.subtype === 'node' || result.type === 'function') return { ok: true, value: result.description ?? result.type };
  const json = (await client.send('Runtime.callFunctionOn', {
    objectId: result.objectId,
    functionDeclaration: VALUE_TEXT_FUNCTION,
    returnByValue: true,
  })) as { result: { value?: unknown } };
  // A document gone took the object with it.
  await client.send('Runtime.releaseObject', { objectId: result.objectId }).catch(() => undefined);
  return { ok: true, value: typeof json.result.value === 'string' ? json.result.value : (result.description ?? 'object') };
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
