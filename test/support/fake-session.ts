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
    async navigate(url, signal): Promise<NavigationResult> {
      record(signal, 'navigate', url);
      if (options.allowed && !options.allowed(url)) return { ok: false, url: session.url, error: `${url} is outside the allow-list` };
      session.url = url;
      return { ok: true, url };
    },
    async history(direction, signal) {
      record(signal, 'history', direction);
      return { ok: true, url: session.url };
    },
    checkUrl(url) {
      return !options.allowed || options.allowed(url) ? { ok: true } : { ok: false, reason: `${url} is outside the allow-list` };
    },
    currentUrl: () => session.url,
    async tabs(signal) {
      signal.throwIfAborted();
      return [{ id: 'tab_1', url: session.url, title: '', active: true }];
    },
    // No page structure in unit tests: toolset members that read it are tested on real Chromium.
    tab: () => undefined,
    async newTab(signal) {
      signal.throwIfAborted();
      throw new Error('the fake session has one tab');
    },
    async switchTab(id, signal) {
      signal.throwIfAborted();
      return id === 'tab_1';
    },
    async closeTab(_id, signal) {
      signal.throwIfAborted();
      return { ok: false, error: 'the last open tab cannot be closed' };
    },
    drainChanges: () => [],
    async mouseMove(x, y, signal) {
      record(signal, 'mouseMove', x, y);
      pointer = { x, y };
    },
    async mouseDown(b, signal) {
      record(signal, 'mouseDown', b);
    },
    async mouseUp(b, signal) {
      record(signal, 'mouseUp', b);
    },
    async click(x, y, o, signal) {
      record(signal, 'click', x, y, o.button, o.clickCount);
      pointer = { x, y };
    },
    async wheel(x, y, dx, dy, signal) {
      record(signal, 'wheel', x, y, dx, dy);
    },
    pointer: () => ({ ...pointer }),
    async keyDown(k, signal) {
      record(signal, 'keyDown', k);
    },
    async keyUp(k, signal) {
      record(signal, 'keyUp', k);
    },
    async typeText(t, signal) {
      record(signal, 'typeText', t);
    },
    async setInputFiles(names, target, signal) {
      record(signal, 'setInputFiles', names.join('|'), target.kind);
      return { ok: true, names: [...names] };
    },
    pendingFileChooser: () => undefined,
    async screenshot(o: ScreenshotOptions, signal: AbortSignal): Promise<Screenshot> {
      record(signal, 'screenshot', o.outputSize ? `${o.outputSize.width}x${o.outputSize.height}` : 'full');
      return { data: PNG, mediaType: 'image/png', width: o.outputSize?.width ?? session.viewport.width, height: o.outputSize?.height ?? session.viewport.height };
    },
    async settle(signal) {
      if (signal.aborted) return;
      record(signal, 'settle');
    },
    async startScreencast() {
      return { stop: async () => undefined };
    },
    async close() {
      session.calls.push('close');
    },
  };
  /** As a port must: a call made once its run is stopped rejects with the signal's reason. */
  function record(signal: AbortSignal, name: string, ...args: unknown[]) {
    signal.throwIfAborted();
    if (session.failOn === name) throw new Error(`Target page, context or browser has been closed (${name})`);
    session.calls.push(args.length ? `${name}(${args.join(',')})` : name);
  }
  return session;
}
