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
 * Adaptive settling instead of fixed sleeps (issue 7): the screenshot after an action shows
 * what the action caused, even 300 ms later, and a still page is not waited on.
 */

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sites/settle');
let server: StaticServer;
/** What the browser layer logged (settle says when it gave up waiting for requests). */
const logs: Array<{ msg: string; fields: Record<string, unknown> }> = [];
const capture = (into: typeof logs): Logger => {
  const at = (fields: Record<string, unknown>, msg?: string) => void into.push({ msg: msg ?? '', fields });
  return { debug: at, info: at, warn: at, error: at, child: () => capture(into) };
};
const capped = () => logs.filter((l) => l.msg === 'settle stopped waiting for requests at its cap');
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
