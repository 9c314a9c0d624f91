import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginLink } from '../../src/contract/access.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';

/**
 * A login link made by a signed-in browser signs in only that browser (docs/security.md#sessions-and-the-browser):
 * a second browser with the link is refused and does not use it up; the asking one signs in with it.
 */

let h: Harness;
let browser: Browser;
let asking: BrowserContext;
let other: BrowserContext;

beforeAll(async () => {
  h = await startHarness({ network: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  asking = await browser.newContext();
  other = await browser.newContext();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const signedIn = async (context: BrowserContext) => (await context.request.get(`${h.server.url}/api/session`)).status() === 200;

describe('a login link', () => {
  it('asked for by a signed-in browser signs in that browser only', async () => {
    const page = await asking.newPage();
    await page.goto(`${h.server.url}/#/settings`);
    await page.getByTestId('api-key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('new-workflow').waitFor();
    // The dashboard's page asks for a link, as any of its scripts would.
    const url = await page.evaluate(async () => {
      const res = await fetch('/api/login-links', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ route: '#/workflows' }) });
      return ((await res.json()) as { url: string }).url;
    });
    expect(url).toContain('/login?token=');

    // Another browser with the link: refused, not signed in.
    const thief = await other.newPage();
    const refused = await thief.goto(url);
    expect(refused?.status()).toBe(401);
    expect(await thief.textContent('body')).toContain('another browser');
    expect(await signedIn(other)).toBe(false);

    // The asking browser, signed out, signs in with the same link (the refused try did not use it up).
    await page.evaluate(() => fetch('/api/session', { method: 'DELETE' }));
    expect(await signedIn(asking)).toBe(false);
    await page.goto(url);
    await page.waitForURL(`${h.server.url}/#/workflows`);
    expect(await signedIn(asking)).toBe(true);
    // Used: a second time it opens nothing, even in the asking browser.
    await page.evaluate(() => fetch('/api/session', { method: 'DELETE' }));
    expect((await page.goto(url))?.status()).toBe(401);
    expect(await signedIn(asking)).toBe(false);
  }, 60_000);

  it('made with a key (a terminal, the demo) is the key holder’s: single use, in whichever browser opens it', async () => {
    const url = (await h.api.as(loginLink)('POST', '/api/login-links', { route: '#/workflows' })).body.url;
    const fresh = await browser.newContext();
    try {
      const page = await fresh.newPage();
      await page.goto(url);
      await page.waitForURL(`${h.server.url}/#/workflows`);
      expect(await signedIn(fresh)).toBe(true);
      const again = await (await other.newPage()).goto(url);
      expect(again?.status()).toBe(401);
    } finally {
      await fresh.close();
    }
  }, 60_000);
});
