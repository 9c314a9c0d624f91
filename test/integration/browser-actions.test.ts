import { fileURLToPath } from 'node:url';
import { decodeJpeg, decodePng, isRed } from '../support/png.js';
import { listProcesses } from '../support/processes.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ActionContext, ActionOutcome, DisplayGeometry } from '../../src/toolset/computer-types.js';
import { executeComputerAction } from '../../src/toolset/computer-actions.js';
import { createPlaywrightSandbox, resolveChromiumPath } from '../../src/browser/playwright-sandbox.js';
import type { BlockedRequest, BrowserSandbox, BrowserSession, ScreencastFrame, Size } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { neverAborted } from '../support/env.js';

/** What the fixture page reports (see test/fixtures/sites/actions/index.html). */
interface PageEvent {
  type: string;
  /** Which page load sent it, and its place among that page's events (from 0). */
  page: string;
  seq: number;
  [field: string]: unknown;
}

const ROOT = fileURLToPath(new URL('../fixtures/sites/actions/', import.meta.url));
const VIEWPORT: Size = { width: 800, height: 600 };
const EVENT_WAIT_MS = 10_000;

/** Deliberately slow fixture responses (a server-side delay, not a test sleep). */
const SLOW_RESPONSE_MS = 400;
const TINY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const served: string[] = [];

const silent = createSilentLogger();

function identityGeometry(size: Size): DisplayGeometry {
  const clamp = (v: number, max: number) => Math.min(Math.max(Math.round(v), 0), max - 1);
  return {
    display: { ...size },
    viewport: { ...size },
    toViewport: (x, y) => ({ x: clamp(x, size.width), y: clamp(y, size.height) }),
    toDisplay: (x, y) => ({ x: clamp(x, size.width), y: clamp(y, size.height) }),
  };
}

/**
 * Collects the page's events as the server receives them; waits for a condition on them. Each
 * event comes in its own request, so they can arrive out of order: the events are kept in the
 * order the pages recorded them, and a condition is only checked once no earlier event of any
 * page is still on its way.
 */
function createEventLog() {
  let events: PageEvent[] = [];
  let pages: string[] = [];
  // Pages of earlier tests: a late event of theirs is dropped.
  const retired = new Set<string>();
  const waiters = new Set<() => void>();
  const complete = () => pages.every((page) => events.filter((e) => e.page === page).every((e, i) => e.seq === i));
  return {
    push(event: PageEvent) {
      if (retired.has(event.page)) return;
      if (!pages.includes(event.page)) pages.push(event.page);
      events.push(event);
      events.sort((a, b) => pages.indexOf(a.page) - pages.indexOf(b.page) || a.seq - b.seq);
      for (const w of [...waiters]) w();
    },
    reset() {
      for (const page of pages) retired.add(page);
      events = [];
      pages = [];
    },
    all: () => events,
    /** Resolves with the events once `done(events)` holds; fails the test after a bound. */
    until(done: (events: PageEvent[]) => boolean, what: string): Promise<PageEvent[]> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!complete() || !done(events)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(events);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`page never reported ${what}; got ${JSON.stringify(events.map((e) => `${e.type}#${e.seq}`))}`));
        }, EVENT_WAIT_MS);
        waiters.add(check);
        check();
      });
    },
  };
}


function ok(outcome: ActionOutcome): Extract<ActionOutcome, { ok: true }> {
  if (!outcome.ok) throw new Error(`action failed: ${outcome.error}`);
  return outcome;
}

describe('computer actions in real Chromium', () => {
  const log = createEventLog();
  let site: StaticServer;
  let other: StaticServer;
  let sandbox: BrowserSandbox;
  let session: BrowserSession | undefined;
  let blocked: BlockedRequest[] = [];
  let siteUrl: string;
  const vault = createSecretVault({ password: 'hunter2!' }, { type: 'object', properties: { password: { type: 'string', writeOnly: true } } });

  const act = (input: Record<string, unknown>) => {
    const context: ActionContext = {
      session: session!,
      geometry: identityGeometry(VIEWPORT),
      toolVersion: 'computer_20251124',
      vault,
      signal: new AbortController().signal,
    };
    return executeComputerAction(input, context);
  };

  beforeAll(async () => {
    site = await startStaticServer({
      root: ROOT,
      handle: async (req, res, body) => {
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        if (req.method === 'POST' && path === '/__events') {
          log.push(JSON.parse(body.toString('utf8')) as PageEvent);
          res.writeHead(204).end();
          return true;
        }
        if (path === '/slow' || path === '/slow-image') {
          // Slow enough to outlast the quiet window settle() needs on a still page.
          await new Promise((resolve) => setTimeout(resolve, SLOW_RESPONSE_MS));
          res.writeHead(200, { 'content-type': path === '/slow' ? 'text/plain' : 'image/png' }).end(path === '/slow' ? 'ok' : TINY_PNG);
          served.push(path);
          return true;
        }
        return false;
      },
    });
    other = await startStaticServer({ root: ROOT });
    siteUrl = `http://actions.test:${site.port}/`;
    sandbox = createPlaywrightSandbox({
      logger: silent,
      chromiumPath: '/usr/bin/chromium',
      hostRules: 'MAP actions.test 127.0.0.1, MAP other.test 127.0.0.1',
    });
  });

  afterAll(async () => {
    await session?.close();
    await sandbox?.close();
    await site?.close();
    await other?.close();
  });

  beforeEach(async () => {
    log.reset();
    blocked = [];
    session = await sandbox.openSession(
      { executionId: 'test', viewport: VIEWPORT, allowedDomains: [`actions.test:${site.port}`], onBlocked: (e) => blocked.push(e) },
      new AbortController().signal,
    );
    const result = await session.navigate(siteUrl, new AbortController().signal);
    expect(result).toMatchObject({ ok: true });
    await log.until((events) => events.some((e) => e.type === 'ready'), 'ready');
  });

  afterEach(async () => {
    await session?.close();
    session = undefined;
  });

  it('presses a chord as keydowns with modifiers, then keyups in reverse', async () => {
    ok(await act({ action: 'key', text: 'ctrl+shift+k' }));
    const events = await log.until((es) => es.filter((e) => e.type === 'keyup').length >= 3, 'three keyups');
    const keys = events.filter((e) => e.type === 'keydown' || e.type === 'keyup').map((e) => `${e.type}:${String(e.key).toLowerCase()}`);
    expect(keys).toEqual(['keydown:control', 'keydown:shift', 'keydown:k', 'keyup:k', 'keyup:shift', 'keyup:control']);
    const main = events.find((e) => e.type === 'keydown' && String(e.key).toLowerCase() === 'k');
    expect(main).toMatchObject({ ctrl: true, shift: true, alt: false, meta: false });
  });

  it('types into an input, revealing the secret only in the keystrokes', async () => {
    ok(await act({ action: 'left_click', coordinate: [120, 32] }));
    const typed = ok(await act({ action: 'type', text: 'pw {{password}}' }));
    expect(typed.label).toBe('type "pw {{password}}"');
    const events = await log.until((es) => es.some((e) => e.type === 'input' && e.value === 'pw hunter2!'), 'the typed value');
    expect(events.filter((e) => e.type === 'input').at(-1)?.value).toBe('pw hunter2!');
  });

  it('types each character as its own key events, in order, and inserts what no key types', async () => {
    ok(await act({ action: 'left_click', coordinate: [120, 32] }));
    ok(await act({ action: 'type', text: 'Ab1!é z' }));
    const events = await log.until((es) => es.some((e) => e.type === 'keyup' && e.key === 'z'), 'the last keyup');
    const keys = events.filter((e) => e.type === 'keydown' || e.type === 'keyup').map((e) => `${e.type}:${String(e.key)}:${String(e.code)}`);
    const press = (key: string, code: string) => [`keydown:${key}:${code}`, `keyup:${key}:${code}`];
    expect(keys).toEqual([...press('A', 'KeyA'), ...press('b', 'KeyB'), ...press('1', 'Digit1'), ...press('!', 'Digit1'), ...press(' ', 'Space'), ...press('z', 'KeyZ')]);
    // One input event per character, each showing the text so far: nothing merged or reordered.
    expect(events.filter((e) => e.type === 'input').map((e) => e.value)).toEqual(['A', 'Ab', 'Ab1', 'Ab1!', 'Ab1!é', 'Ab1!é ', 'Ab1!é z']);
  });

  it('scrolls the element under the pointer by 100 px per click', async () => {
    const out = ok(await act({ action: 'scroll', coordinate: [170, 250], scroll_direction: 'down', scroll_amount: 3 }));
    expect(out.point).toEqual({ x: 170, y: 250 });
    const events = await log.until((es) => es.some((e) => e.type === 'scroll' && e.scrollTop === 300), 'scrollTop 300');
    expect(events.find((e) => e.type === 'wheel')).toMatchObject({ deltaY: 300, deltaX: 0 });
    ok(await act({ action: 'scroll', coordinate: [170, 250], scroll_direction: 'right', scroll_amount: 2 }));
    await log.until((es) => es.some((e) => e.type === 'scroll' && e.scrollLeft === 200 && e.scrollTop === 300), 'scrollLeft 200');
  });

  it('holds a modifier during a scroll', async () => {
    ok(await act({ action: 'scroll', coordinate: [170, 250], scroll_direction: 'down', scroll_amount: 1, text: 'shift' }));
    const events = await log.until((es) => es.some((e) => e.type === 'keyup' && e.key === 'Shift'), 'shift released');
    expect(events.find((e) => e.type === 'wheel')).toMatchObject({ shift: true });
  });

  it('selects a paragraph with triple_click', async () => {
    ok(await act({ action: 'triple_click', coordinate: [60, 81] }));
    const events = await log.until((es) => es.some((e) => e.type === 'click' && e.detail === 3), 'a click with detail 3');
    const clicks = events.filter((e) => e.type === 'click');
    // The last click of the three carries detail 3 (a busy machine may merge the first two).
    expect(clicks.at(-1)?.detail).toBe(3);
    expect(String(clicks.at(-1)?.selection).trim()).toBe('The quick brown fox jumps over the lazy dog.');
  });

  it('clicks with a held modifier and with other buttons', async () => {
    ok(await act({ action: 'left_click', coordinate: [650, 450], text: 'ctrl' }));
    ok(await act({ action: 'right_click', coordinate: [650, 450] }));
    ok(await act({ action: 'double_click', coordinate: [650, 450] }));
    const events = await log.until((es) => es.some((e) => e.type === 'contextmenu') && es.some((e) => e.type === 'click' && e.detail === 2), 'all clicks');
    expect(events.find((e) => e.type === 'click')).toMatchObject({ target: 'red', detail: 1, ctrl: true, x: 650, y: 450 });
    expect(events.filter((e) => e.type === 'click' && e.detail === 2)).toHaveLength(1);
  });

  it('drags an element with left_click_drag', async () => {
    ok(await act({ action: 'left_click_drag', start_coordinate: [430, 180], coordinate: [630, 280] }));
    const events = await log.until((es) => es.some((e) => e.type === 'drop'), 'a drop');
    const drop = events.find((e) => e.type === 'drop')!;
    expect(drop).toMatchObject({ left: 600, top: 250 });
    expect(drop.moves as number).toBeGreaterThan(3);
  });

  it('keeps the button down across separate mouse down, move and up actions', async () => {
    ok(await act({ action: 'mouse_move', coordinate: [430, 180] }));
    ok(await act({ action: 'left_mouse_down' }));
    ok(await act({ action: 'mouse_move', coordinate: [480, 230] }));
    const up = ok(await act({ action: 'left_mouse_up' }));
    expect(up.point).toEqual({ x: 480, y: 230 });
    const events = await log.until((es) => es.some((e) => e.type === 'drop'), 'a drop');
    expect(events.find((e) => e.type === 'drop')).toMatchObject({ left: 450, top: 200 });
    const position = ok(await act({ action: 'cursor_position' }));
    expect(position.text).toBe('X=480,Y=230');
  });

  it('zooms into a region: the image fits the display and shows the region', async () => {
    // The red square is at 600..700 × 400..500; the region is 120x120 around it.
    const out = ok(await act({ action: 'zoom', region: [590, 390, 710, 510] }));
    expect(out.image).toBeDefined();
    // What the model is shown is JPEG.
    expect(out.image!.mediaType).toBe('image/jpeg');
    const image = await decodeJpeg(out.image!.data);
    // Square region in a 800x600 display: scaled to 600x600.
    expect([image.width, image.height]).toEqual([600, 600]);
    expect([out.image!.width, out.image!.height]).toEqual([600, 600]);
    let red = 0;
    let total = 0;
    for (let y = 0; y < image.height; y += 4) {
      for (let x = 0; x < image.width; x += 4) {
        total++;
        if (isRed(image.pixel(x, y))) red++;
      }
    }
    // 100² of 120² ≈ 69% of the region is red.
    expect(red / total).toBeGreaterThan(0.6);
    expect(red / total).toBeLessThan(0.78);
  });

  it('zooms into the visible region of a scrolled page', async () => {
    expect((await session!.navigate(`${siteUrl}tall.html`, new AbortController().signal)).ok).toBe(true);
    ok(await act({ action: 'scroll', coordinate: [400, 300], scroll_direction: 'down', scroll_amount: 12 }));
    await log.until((es) => es.some((e) => e.type === 'window-scroll' && e.scrollY === 1200), 'scrollY 1200');
    await session!.settle(new AbortController().signal);
    // The square (document y 1500) is now at viewport y 300..400.
    const out = ok(await act({ action: 'zoom', region: [600, 300, 700, 400] }));
    const image = await decodeJpeg(out.image!.data);
    expect([image.width, image.height]).toEqual([600, 600]);
    expect(isRed(image.pixel(300, 300))).toBe(true);
    expect(isRed(image.pixel(10, 10))).toBe(true);
    expect(isRed(image.pixel(590, 590))).toBe(true);
  });

  it('takes a full screenshot at the viewport size', async () => {
    const shot = await session!.screenshot({}, neverAborted);
    const image = decodePng(shot.data);
    expect([shot.width, shot.height]).toEqual([800, 600]);
    expect([image.width, image.height]).toEqual([800, 600]);
    expect(image.pixel(650, 450)).toEqual([255, 0, 0]);
  });

  it('refuses a navigation outside the allow-list before any request is sent', async () => {
    const before = other.requests.length;
    const result = await session!.navigate(`http://other.test:${other.port}/`, new AbortController().signal);
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/other\.test/);
    expect(result.url).toBe(siteUrl);
    // Chromium's own background requests may be refused by other layers meanwhile.
    expect(blocked.filter((b) => b.layer === 'navigate-tool')).toEqual([expect.objectContaining({ url: `http://other.test:${other.port}/` })]);
    await session!.settle(new AbortController().signal);
    expect(other.requests.length).toBe(before);
    expect(session!.currentUrl()).toBe(siteUrl);
  });

  it('settles a still page and streams screencast frames with back-pressure', async () => {
    await session!.settle(new AbortController().signal);
    const frames: ScreencastFrame[] = [];
    let release: () => void = () => undefined;
    let first: (frame: ScreencastFrame) => void = () => undefined;
    const gotFirst = new Promise<ScreencastFrame>((resolve) => (first = resolve));
    const held = new Promise<void>((resolve) => (release = resolve));
    const cast = await session!.startScreencast({ maxWidth: 400, maxHeight: 300, quality: 60 }, async (frame) => {
      frames.push(frame);
      first(frame);
      await held;
    });
    // Paint something so a frame is produced even on a still page.
    ok(await act({ action: 'left_click', coordinate: [120, 32] }));
    ok(await act({ action: 'type', text: 'abc' }));
    const frame = await gotFirst;
    expect(frame.data[0]).toBe(0xff);
    expect(frame.data[1]).toBe(0xd8);
    expect(frame.width).toBeLessThanOrEqual(400);
    expect(frame.height).toBeLessThanOrEqual(300);
    expect(Math.abs(frame.timestampMs - Date.now())).toBeLessThan(60_000);
    ok(await act({ action: 'type', text: 'def' }));
    await log.until((es) => es.some((e) => e.type === 'input' && e.value === 'abcdef'), 'typed text');
    // The first frame is not acknowledged yet: no second frame may arrive.
    expect(frames).toHaveLength(1);
    release();
    await cast.stop();
    const count = frames.length;
    ok(await act({ action: 'type', text: 'ghi' }));
    await log.until((es) => es.some((e) => e.type === 'input' && e.value === 'abcdefghi'), 'more typed text');
    await session!.settle(new AbortController().signal);
    expect(frames.length).toBe(count);
  });
  it('settle waits for a request an action started', async () => {
    served.length = 0;
    ok(await act({ action: 'left_click', coordinate: [100, 495] }));
    await session!.settle(new AbortController().signal);
    expect(served).toContain('/slow');
  });

  it('settle waits for a navigation and its subresources', async () => {
    served.length = 0;
    ok(await act({ action: 'left_click', coordinate: [100, 535] }));
    await session!.settle(new AbortController().signal);
    expect(session!.currentUrl()).toBe(`${siteUrl}next.html`);
    expect(served).toContain('/slow-image');
    expect(decodePng((await session!.screenshot({}, neverAborted)).data).pixel(400, 300)).toEqual([0, 0, 255]);
  });

  it('acts on a popup the page opens, and on the opener again once it closes', async () => {
    ok(await act({ action: 'left_click', coordinate: [100, 415] }));
    await log.until((es) => es.some((e) => e.type === 'popup-ready'), 'the popup');
    await vi.waitFor(() => expect(session!.currentUrl()).toBe(`${siteUrl}popup.html`), { timeout: 5_000, interval: 20 });
    await session!.settle(new AbortController().signal);
    expect(decodePng((await session!.screenshot({}, neverAborted)).data).pixel(400, 300)).toEqual([0, 192, 0]);
    // The popup's own button closes it.
    ok(await act({ action: 'left_click', coordinate: [100, 35] }));
    await vi.waitFor(() => expect(session!.currentUrl()).toBe(siteUrl), { timeout: 5_000, interval: 20 });
    expect(decodePng((await session!.screenshot({}, neverAborted)).data).pixel(650, 450)).toEqual([255, 0, 0]);
  });

  it('keeps acting on the page when a refused popup is closed', async () => {
    ok(await act({ action: 'left_click', coordinate: [100, 455] }));
    await vi.waitFor(() => expect(blocked.some((b) => b.url.includes('elsewhere.test'))).toBe(true), { timeout: 5_000, interval: 20 });
    await vi.waitFor(() => expect(session!.currentUrl()).toBe(siteUrl), { timeout: 5_000, interval: 20 });
    ok(await act({ action: 'left_click', coordinate: [120, 32] }));
    ok(await act({ action: 'type', text: 'still here' }));
    await log.until((es) => es.some((e) => e.type === 'input' && e.value === 'still here'), 'typing on the opener');
  });
});

/** Chromium processes this test process started (direct children). */
function chromiumChildren(): number[] {
  return listProcesses()
    .filter((p) => p.ppid === process.pid && /chrom/i.test(p.comm) && p.state !== 'Z')
    .map((p) => p.pid);
}

describe('the Playwright sandbox lifecycle', () => {
  let sandbox: BrowserSandbox | undefined;
  let site: StaticServer;

  beforeAll(async () => {
    site = await startStaticServer({ root: ROOT });
  });

  afterAll(async () => {
    await sandbox?.close();
    await site?.close();
  });

  const open = (onCrash?: (error: Error) => void) =>
    sandbox!.openSession(
      { executionId: 'lifecycle', viewport: VIEWPORT, allowedDomains: [`actions.test:${site.port}`], onBlocked: () => undefined, ...(onCrash ? { onCrash } : {}) },
      new AbortController().signal,
    );

  it('names CHROMIUM_PATH when the configured browser does not exist', () => {
    expect(() => resolveChromiumPath('/nonexistent/chromium')).toThrow(/CHROMIUM_PATH/);
    expect(resolveChromiumPath('/usr/bin/chromium')).toBe('/usr/bin/chromium');
  });

  it('launches lazily, reports a dead browser once, and launches again', async () => {
    sandbox = createPlaywrightSandbox({ logger: silent, chromiumPath: '/usr/bin/chromium', hostRules: 'MAP actions.test 127.0.0.1' });
    expect(chromiumChildren()).toEqual([]);
    await sandbox.checkReady(new AbortController().signal);
    const [pid] = chromiumChildren();
    expect(pid).toBeDefined();

    const crashes: Error[] = [];
    let crashed: () => void = () => undefined;
    const crashSeen = new Promise<void>((resolve) => (crashed = resolve));
    const first = await open((error) => {
      crashes.push(error);
      crashed();
    });
    expect((await first.navigate(`http://actions.test:${site.port}/`, new AbortController().signal)).ok).toBe(true);
    process.kill(pid!, 'SIGKILL');
    await crashSeen;
    expect(crashes).toHaveLength(1);
    expect(crashes[0]!.message).toMatch(/disconnected/);
    await first.close();
    await first.close();

    // The next session gets a new browser.
    const second = await open();
    const result = await second.navigate(`http://actions.test:${site.port}/`, new AbortController().signal);
    expect(result.ok).toBe(true);
    expect(chromiumChildren()).not.toContain(pid);
    await second.close();
  });

  it('closes idempotently and refuses sessions afterwards, leaving no Chromium behind', async () => {
    sandbox ??= createPlaywrightSandbox({ logger: silent, chromiumPath: '/usr/bin/chromium' });
    const session = await open();
    await Promise.all([sandbox.close(), sandbox.close()]);
    // Closing the sandbox closed the session too; closing it again is harmless.
    await session.close();
    await expect(open()).rejects.toThrow(/closed/);
    await vi.waitFor(() => expect(chromiumChildren()).toEqual([]), { timeout: 10_000, interval: 50 });
  });
});
