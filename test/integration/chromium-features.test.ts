import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerDisabledFeatures } from '../../src/browser/chromium-features.js';
import { createPlaywrightSandbox, resolveChromiumPath } from '../../src/browser/playwright-sandbox.js';
import type { BlockedRequest, BrowserSandbox } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { commandLine, descendants } from '../support/processes.js';
import { neverAborted } from '../support/env.js';

/**
 * The browser the worker launches (docs/configuration.md, `CHROMIUM_PATH`): the headless shell when it is installed, and on
 * full Chromium one `--disable-features` switch that keeps Playwright's features and adds the
 * worker's, so that a context costs no address-bar renderer and a form sends no autofill query.
 */

const FULL_CHROMIUM = '/usr/bin/chromium';
const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';
const FORM =
  '<!doctype html><title>Form</title><form action="/done" method="post"><label>Name <input name="name" autocomplete="name"></label>' +
  '<label>E-mail <input name="email" type="email" autocomplete="email"></label><label>Street <input name="street" autocomplete="street-address"></label>' +
  '<label>City <input name="city" autocomplete="address-level2"></label><label>Postcode <input name="zip" autocomplete="postal-code"></label><button>Send</button></form>';

let server: http.Server;
let origin: string;
let sandbox: BrowserSandbox | undefined;

beforeAll(async () => {
  server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(FORM));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://form.test:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await sandbox?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Chromium processes below this one: the browser's command line, and the renderers'. */
function chromiumProcesses(): { browser: string[]; renderers: string[] } {
  const lines = descendants().map((p) => commandLine(p.pid)).filter((cmd) => /chrom/.test(cmd));
  return { browser: lines.filter((cmd) => !cmd.includes('--type=')), renderers: lines.filter((cmd) => cmd.includes('--type=renderer')) };
}

const featuresIn = (cmd: string): string[][] =>
  [...cmd.matchAll(/--disable-features=(\S+)/g)].map((match) => match[1]!.split(','));

describe('the browser the worker launches', () => {
  it('is the headless shell when it is installed, full Chromium for a window', () => {
    expect(resolveChromiumPath()).toBe(existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : FULL_CHROMIUM);
    expect(resolveChromiumPath(undefined, false)).toBe(FULL_CHROMIUM);
  });

  it('on full Chromium: keeps every feature Playwright disables, and starts no address-bar renderer nor autofill query', async () => {
    const blocked: BlockedRequest[] = [];
    sandbox = createPlaywrightSandbox({ logger: createSilentLogger(), chromiumPath: FULL_CHROMIUM, hostRules: 'MAP form.test 127.0.0.1' });
    const signal = new AbortController().signal;
    const session = await sandbox.openSession({ executionId: 'features', viewport: { width: 800, height: 600 }, allowedDomains: [new URL(origin).host], onBlocked: (e) => blocked.push(e) }, signal);

    // Chromium keeps the last switch: ours, which must still hold all of Playwright's (the first).
    const { browser } = chromiumProcesses();
    expect(browser).toHaveLength(1);
    const switches = featuresIn(browser[0]!);
    expect(switches.length).toBeGreaterThanOrEqual(2);
    const playwrights = switches[0]!;
    const effective = switches[switches.length - 1]!;
    expect(effective).toEqual(expect.arrayContaining([...playwrights, ...workerDisabledFeatures()]));

    expect((await session.navigate(`${origin}/`, signal)).ok).toBe(true);
    await session.settle(signal);
    // Typing into a form is what makes Chromium ask its autofill server about the fields.
    await session.click(120, 20, { button: 'left', clickCount: 1 }, neverAborted);
    await session.typeText('Ann Example', neverAborted);
    await session.settle(signal);
    expect(chromiumProcesses().renderers.filter((cmd) => cmd.includes('top-chrome'))).toEqual([]);
    await session.close();
    // The context is gone: anything Chromium still sends for it would be refused and reported.
    expect(blocked).toEqual([]);
  });
});
