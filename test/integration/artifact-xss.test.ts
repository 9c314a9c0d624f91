import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';

/**
 * Stored XSS through artifacts (docs/operations.md#browser-security): a page's download (an svg with a script,
 * an html page) is served by the local service in the dashboard's origin. Opened by a signed-in
 * user in real Chromium, its script must not run there: the browser saves it instead. A
 * positive control serves the same bytes as a renderable svg in the same origin and shows the
 * script would have reached the API with the session.
 */

const MARK = '/api/login-links?from=artifact';
const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>fetch('${MARK}', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })</script></svg>`;
const HTML = `<!doctype html><script>fetch('${MARK}', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })</script>`;

let h: Harness;
let browser: Browser;
let context: BrowserContext;
let artifactsDir: string;
const marks: string[] = [];

beforeAll(async () => {
  artifactsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'artifact-xss-'));
  const dir = path.join(artifactsDir, 'executions', 'e1');
  await fs.mkdir(path.join(dir, 'downloads'), { recursive: true });
  await fs.writeFile(path.join(dir, 'downloads', 'evil.svg'), SVG);
  await fs.writeFile(path.join(dir, 'downloads', 'evil.png'), SVG);
  await fs.writeFile(path.join(dir, 'downloads', 'page.html'), HTML);
  await fs.writeFile(path.join(dir, 'evil.svg'), SVG);
  await fs.writeFile(path.join(dir, 'page.xml'), SVG);
  h = await startHarness({ artifactsDir, network: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  context = await browser.newContext({ acceptDownloads: true });
  context.on('request', (request) => {
    if (request.url().includes('from=artifact')) marks.push(request.url());
  });
  // Signed in as a dashboard user is: with the session cookie a key holder obtained.
  const page = await context.newPage();
  await page.goto(h.server.url);
  await page.evaluate(async (key) => {
    await fetch('/api/session', { method: 'POST', headers: { 'X-Service-Key': key } });
  }, API_KEY);
  expect((await context.cookies()).some((c) => c.httpOnly)).toBe(true);
  await page.close();
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await fs.rm(artifactsDir, { recursive: true, force: true });
});

describe('artifacts a page supplied, opened in the dashboard origin', () => {
  it.each(['downloads/evil.svg', 'downloads/evil.png', 'downloads/page.html', 'evil.svg', 'page.xml'])('%s is saved, never rendered', async (name) => {
    const page = await context.newPage();
    await page.goto(`${h.server.url}/#/executions`);
    const url = `${h.server.url}/artifacts/executions/e1/${name}`;
    const [download] = await Promise.all([page.waitForEvent('download'), page.evaluate((href) => void (location.href = href), url)]);
    expect(download.suggestedFilename()).toBe(path.basename(name));
    expect(await fs.readFile((await download.path())!, 'utf8')).toContain('<script>');
    // The tab still shows the dashboard: the svg never became a document.
    expect(page.url()).toBe(`${h.server.url}/#/executions`);
    await download.delete();
    await page.close();
  });

  it('the same bytes as a renderable svg in that origin do run (the check can fail)', async () => {
    const page = await context.newPage();
    await page.route(`${h.server.url}/control.svg`, (route) => route.fulfill({ status: 200, contentType: 'image/svg+xml', body: SVG }));
    const marked = page.waitForRequest((request) => request.url().includes('from=artifact'));
    await page.goto(`${h.server.url}/control.svg`);
    await marked;
    // Only the control's script ran: none of the artifacts opened above reached the API.
    expect(marks).toHaveLength(1);
    await page.close();
  });
});
