import type { BrowserSession, NavigationResult, Screenshot, ScreenshotOptions } from '../../src/browser/types.js';

/** An in-memory BrowserSession for unit tests: records calls, returns a tiny PNG. */
export interface FakeSession extends BrowserSession {
  calls: string[];
  url: string;
  /** Makes the next calls of this method throw (simulates a dead browser). */
  failOn?: string;
}

// A 1×1 transparent PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

export function createFakeSession(options: { allowed?: (url: string) => boolean; width?: number; height?: number } = {}): FakeSession {
  let pointer = { x: 0, y: 0 };
  const session: FakeSession = {
    calls: [],
    url: 'about:blank',
    viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
    async navigate(url): Promise<NavigationResult> {
      record('navigate', url);
      if (options.allowed && !options.allowed(url)) return { ok: false, url: session.url, error: `${url} is outside the allow-list` };
      session.url = url;
      return { ok: true, url };
    },
    async history(direction) {
      record('history', direction);
      return { ok: true, url: session.url };
    },
    checkUrl(url) {
      return !options.allowed || options.allowed(url) ? { ok: true } : { ok: false, reason: `${url} is outside the allow-list` };
    },
    currentUrl: () => session.url,
    async tabs() {
      return [{ id: 'tab_1', url: session.url, title: '', active: true }];
    },
    // No page structure in unit tests: toolset members that read it are tested on real Chromium.
    tab: () => undefined,
    async newTab() {
      throw new Error('the fake session has one tab');
    },
    async switchTab(id) {
      return id === 'tab_1';
    },
    async closeTab() {
      return { ok: false, error: 'the last open tab cannot be closed' };
    },
    drainChanges: () => [],
    async mouseMove(x, y) {
      record('mouseMove', x, y);
      pointer = { x, y };
    },
    async mouseDown(b) {
      record('mouseDown', b);
    },
    async mouseUp(b) {
      record('mouseUp', b);
    },
    async click(x, y, o) {
      record('click', x, y, o.button, o.clickCount);
      pointer = { x, y };
    },
    async wheel(x, y, dx, dy) {
      record('wheel', x, y, dx, dy);
    },
    pointer: () => ({ ...pointer }),
    async keyDown(k) {
      record('keyDown', k);
    },
    async keyUp(k) {
      record('keyUp', k);
    },
    async typeText(t) {
      record('typeText', t);
    },
    async setInputFiles(names, target) {
      record('setInputFiles', names.join('|'), target.kind);
      return { ok: true, names: [...names] };
    },
    pendingFileChooser: () => undefined,
    async screenshot(o?: ScreenshotOptions): Promise<Screenshot> {
      record('screenshot', o?.outputSize ? `${o.outputSize.width}x${o.outputSize.height}` : 'full');
      return { data: PNG, mediaType: 'image/png', width: o?.outputSize?.width ?? session.viewport.width, height: o?.outputSize?.height ?? session.viewport.height };
    },
    async settle() {
      record('settle');
    },
    async startScreencast() {
      return { stop: async () => undefined };
    },
    async close() {
      record('close');
    },
  };
  function record(name: string, ...args: unknown[]) {
    if (session.failOn === name) throw new Error(`Target page, context or browser has been closed (${name})`);
    session.calls.push(args.length ? `${name}(${args.join(',')})` : name);
  }
  return session;
}
