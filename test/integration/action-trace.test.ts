import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession, BrowserTab } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionSpaceChoice } from '../../src/toolset/types.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { neverAborted } from '../support/env.js';

/**
 * The run cache's trace of an action (the element under the point, the focused element) is read
 * from the page only when something keeps it: an action run with `trace: false` reads neither
 * and still acts (docs/run-cache.md). Real Chromium; the page reads are counted on the real tab.
 */

const silent = createSilentLogger();
const PAGE = '<!doctype html><title>Trace</title><input aria-label="Note" style="position:absolute;left:20px;top:20px;width:300px;height:40px;font-size:24px">';

let server: StaticServer;
let sandbox: BrowserSandbox;
let origin: string;

beforeAll(async () => {
  server = await startStaticServer({
    root: '/nonexistent',
    handle: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return true;
    },
  });
  origin = `http://trace.test:${server.port}`;
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP trace.test 127.0.0.1' });
});

afterAll(async () => {
  await sandbox?.close();
  await server?.close();
});

/** The session with its tab's two trace reads counted. */
function counted(session: BrowserSession): { session: BrowserSession; reads: string[] } {
  const reads: string[] = [];
  const wrapTab = (tab: BrowserTab | undefined) =>
    tab &&
    new Proxy(tab, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if ((key === 'identifyAt' || key === 'focused') && typeof value === 'function') {
          return (...args: unknown[]) => {
            reads.push(key);
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const proxy = new Proxy(session, {
    get(target, key, receiver) {
      if (key === 'tab') return (id?: string) => wrapTab(target.tab(id));
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { session: proxy, reads };
}

const images = { maxEdgePx: 2000, maxPixels: 3_750_000 };
const choices: Array<[string, ActionSpaceChoice, boolean]> = [
  ['the computer tool', { kind: 'computer', computer: { type: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: false }, images }, false],
  ['the computer toolset', { kind: 'computer', computer: { type: 'computer_toolset_20260801', zoom: false }, images }, true],
];

describe.each(choices)('action traces with %s', (_name, choice, toolset) => {
  it('reads the page for the trace only when the run keeps traces', async () => {
    const signal = new AbortController().signal;
    const real = await sandbox.openSession({ executionId: 'trace', viewport: { width: 800, height: 600 }, allowedDomains: [new URL(origin).host], onBlocked: () => {} }, signal);
    try {
      await real.navigate(`${origin}/`, signal);
      const { session, reads } = counted(real);
      const space = createActionSpace(choice, { session, secrets: createSecretVault({}, undefined), allowJavascript: false });
      let n = 0;
      const call = (action: string, input: Record<string, unknown>, trace?: boolean) =>
        space.run(
          toolset
            ? { type: 'tool_use', id: `toolu_${++n}`, name: action, input, toolset_name: 'computer' }
            : { type: 'tool_use', id: `toolu_${++n}`, name: 'computer', input: { action, ...input } },
          { signal, ...(trace === undefined ? {} : { trace }) },
        );

      const kept = await call('left_click', { coordinate: [100, 40] });
      expect(kept.ok).toBe(true);
      expect(kept.trace?.target).toMatchObject({ role: 'textbox', name: 'Note' });
      const typed = await call('type', { text: 'ab' }, true);
      expect(typed.trace?.focus).toMatchObject({ role: 'textbox', name: 'Note' });
      expect(reads).toEqual(['identifyAt', 'focused']);

      reads.length = 0;
      const click = await call('left_click', { coordinate: [100, 40] }, false);
      const type = await call('type', { text: 'cd' }, false);
      expect([click.ok, type.ok]).toEqual([true, true]);
      expect(reads).toEqual([]);
      expect(click.trace?.target).toBeUndefined();
      expect(type.trace?.focus).toBeUndefined();
      // The actions ran all the same.
      const value = await real.tab()!.evaluate('document.querySelector("input").value', 5_000, neverAborted);
      expect(value).toMatchObject({ ok: true, value: 'abcd' });
    } finally {
      await real.close();
    }
  });
});
