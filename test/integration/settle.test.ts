import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { decodePng } from '../support/png.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { neverAborted } from '../support/env.js';

/**
 * Adaptive settling instead of fixed sleeps (docs/action-spaces.md#settling): the screenshot after an action shows
 * what the action caused, even 300 ms later, and a still page is not waited on.
 */

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sites/settle');
const USERS = ['Ada Lovelace', 'Kofi Mensah', 'Kofi Osei', 'Grace Hopper'];
const CITIES = ['Accra', 'Kumasi', 'Kampala', 'Lagos'];
let server: StaticServer;
/** What the browser layer logged (settle says when it gave up waiting for requests). */
const logs: Array<{ msg: string; fields: Record<string, unknown> }> = [];
const capture = (into: typeof logs): Logger => {
  const at = (fields: Record<string, unknown>, msg?: string) => void into.push({ msg: msg ?? '', fields });
  return { debug: at, info: at, warn: at, error: at, child: () => capture(into) };
};
const capped = () => logs.filter((l) => l.msg === 'settle stopped waiting for requests at its cap');
const pageCapped = () => logs.filter((l) => l.msg === 'settle stopped waiting for the page at its cap');
let sandbox: BrowserSandbox;
let session: BrowserSession;

beforeAll(async () => {
  server = await startStaticServer({
    root: ROOT,
    // The form's target answers late with an all-green page; /colour answers late too.
    handle: async (req, res) => {
      // Never answered (a long poll), or answered with a body that never ends (a stream): the
      // server closes them when the test ends.
      if (req.url === '/hang') return true;
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-content-type-options': 'nosniff', 'x-colour': 'rgb(0, 128, 255)' });
        res.write('first chunk of a stream that goes on');
        return true;
      }
      if (req.url === '/late-body') {
        // nosniff: Chromium would otherwise hold a text/plain answer's headers for its first bytes.
        res.writeHead(200, { 'content-type': 'text/plain', 'x-content-type-options': 'nosniff' });
        res.flushHeaders();
        await new Promise((resolve) => setTimeout(resolve, 300));
        res.end('rgb(255, 0, 255)');
        return true;
      }
      if (req.url?.startsWith('/users?')) {
        // Redmine's watcher search answers with the matching users, a moment later.
        const q = new URL(req.url, 'http://x').searchParams.get('q') ?? '';
        await new Promise((resolve) => setTimeout(resolve, 150));
        res.writeHead(200, { 'content-type': 'text/plain' }).end(USERS.filter((u) => u.toLowerCase().includes(q.toLowerCase())).join(', '));
        return true;
      }
      if (req.url?.startsWith('/cities?')) {
        const q = new URL(req.url, 'http://x').searchParams.get('q') ?? '';
        await new Promise((resolve) => setTimeout(resolve, 100));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(CITIES.filter((c) => c.toLowerCase().startsWith(q.toLowerCase()))));
        return true;
      }
      if (req.url === '/colour') {
        await new Promise((resolve) => setTimeout(resolve, 250));
        res.writeHead(200, { 'content-type': 'text/plain' }).end('rgb(255, 255, 0)');
        return true;
      }
      if (!req.url?.startsWith('/slow')) return false;
      await new Promise((resolve) => setTimeout(resolve, 300));
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><body style="margin:0;background:rgb(0,255,0)"></body>');
      return true;
    },
  });
  sandbox = createPlaywrightSandbox({ logger: capture(logs), hostRules: 'MAP settle.test 127.0.0.1' });
});

afterAll(async () => {
  await sandbox?.close();
  await server?.close();
});

beforeEach(async () => {
  await session?.close();
  session = await sandbox.openSession({ executionId: 'settle', viewport: { width: 600, height: 300 }, allowedDomains: [`settle.test:${server.port}`], onBlocked: () => undefined }, new AbortController().signal);
  const opened = await session.navigate(`http://settle.test:${server.port}/`, new AbortController().signal);
  expect(opened.ok).toBe(true);
  await session.settle(new AbortController().signal);
});

afterAll(async () => {
  await session?.close();
});

const panel = async () => decodePng((await session.screenshot({}, neverAborted)).data).pixel(400, 120);

/** Clicks a fixture button, then waits as the worker does before its screenshot. */
const clickAndSettle = async (x: number, y: number) => {
  await session.click(x, y, { button: 'left', clickCount: 1 }, neverAborted);
  await session.settle(new AbortController().signal);
};

describe('settle after an action', () => {
  it('waits for a change the click causes 300 ms later, so the screenshot shows it', async () => {
    expect(await panel()).toEqual([255, 255, 255]);
    await clickAndSettle(120, 40);
    expect(await panel()).toEqual([0, 0, 255]);
  });

  it('does not wait on a still page for a timer the page set before the action', async () => {
    await clickAndSettle(120, 100);
    // The page's own timer, set at load and due 3 s later, has not fired: settle did not wait.
    expect(await panel()).toEqual([255, 255, 255]);
  });

  it('waits for the answer of a request the click made, and for the page to show it', async () => {
    await clickAndSettle(120, 220);
    expect(await panel()).toEqual([255, 255, 0]);
  });

  it('waits for a form submission whose navigation starts after the page looked still', async () => {
    await clickAndSettle(120, 160);
    expect(await panel()).toEqual([0, 255, 0]);
  });

  it('waits for an answer body the page reads after its headers came', async () => {
    await clickAndSettle(220, 270);
    expect(await panel()).toEqual([255, 0, 255]);
  });

  it('waits for a request the action made up to its cap, and neither for it later nor for a body that streams on', async () => {
    logs.length = 0;
    // A request that is never answered: settle gives up at its cap and says which one it was.
    await clickAndSettle(360, 270);
    expect(capped().map((l) => l.fields.pending)).toEqual([[expect.stringMatching(/\/hang$/)]]);
    logs.length = 0;
    // The next action: that request (a long poll now) is older than it; the stream's body never ends.
    await clickAndSettle(80, 270);
    expect(await panel()).toEqual([0, 128, 255]);
    expect(capped()).toEqual([]);
  });
});

describe('settle after an input, on timers of either kind', () => {
  /** The fixture; with `clocks`, two clocks tick on it too. */
  const open = async (clocks = false) => {
    const opened = await session.navigate(`http://settle.test:${server.port}/timers.html${clocks ? '?clocks' : ''}`, neverAborted);
    expect(opened.ok).toBe(true);
    await session.settle(neverAborted);
  };
  const text = async (expression: string) => {
    const out = await session.tab()!.evaluate(expression, 5_000, neverAborted);
    if (!out.ok) throw new Error(out.error);
    return out.value;
  };
  /** Clicks a field of the fixture (each is 200 × 30 at x 20), types into it, then waits as the worker does. */
  const typeInto = async (top: number, value: string) => {
    await session.click(120, top + 15, { button: 'left', clickCount: 1 }, neverAborted);
    await session.settle(neverAborted);
    await session.typeText(value, neverAborted);
    await session.settle(neverAborted);
  };

  it("waits for an interval poll's next tick: the list it filters by the typed value is filtered when settle returns", async () => {
    await open();
    await typeInto(20, 'kof');
    expect(await text("[...document.querySelectorAll('#names li')].filter((li) => !li.hidden).map((li) => li.textContent).join()")).toBe('Kofi');
  });

  it("waits for the request a poll's tick makes (Redmine's watcher search: a 300 ms poll, then an XMLHttpRequest)", async () => {
    await open();
    await typeInto(70, 'kofi');
    expect(await text("document.getElementById('users').textContent")).toBe('Kofi Mensah, Kofi Osei');
  });

  it('waits for a debounced search: the timer after the last keystroke, then its fetch', async () => {
    await open();
    await typeInto(120, 'k');
    expect(await text("[...document.querySelectorAll('#cities li')].map((li) => li.textContent).join()")).toBe('Kumasi,Kampala');
  });

  it('is not held to its cap by clocks that never stop (an interval and a self-renewing timeout, each faster than the quiet window)', async () => {
    await open(true);
    logs.length = 0;
    await clickAndSettle(120, 185);
    await typeInto(20, 'gr');
    expect(pageCapped()).toEqual([]);
    // The poll beside the clocks was still waited for.
    expect(await text("[...document.querySelectorAll('#names li')].filter((li) => !li.hidden).map((li) => li.textContent).join()")).toBe('Grace');
  });

  it('adds nothing to the page\'s global names: the probe is one non-enumerable property', async () => {
    await open();
    const names = JSON.parse(await text("JSON.stringify(Object.keys(window).filter((k) => /executionWorker|pageExports/i.test(k)))")) as string[];
    expect(names).toEqual([]);
    expect(await text("typeof window.__executionWorkerSettle")).toBe('object');
  });
});
