import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyList } from '../../src/contract/access.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * Settings → API Keys in real Chromium against the local API on real Redis: the bootstrap keys
 * listed, a named key made and shown once, its last use, and revoking it, which signs out at once
 * a browser that signed in with it.
 */

let h: Harness;
let browser: Browser;
let operator: BrowserContext;
let page: Page;

beforeAll(async () => {
  h = await startHarness({ network: true });
  browser = await launchDashboardBrowser();
  operator = await browser.newContext();
  page = await operator.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const row = (p: Page, name: string) => p.locator(`[data-testid="api-key-row"][data-name="${name}"]`);

async function signIn(p: Page, key: string): Promise<void> {
  await signInDashboard(p, `${h.server.url}/#/settings`, key);
}

describe('Settings → API Keys', () => {
  it('lists the bootstrap keys, makes a named key shown once, shows its use, and revokes it at once', async () => {
    await signIn(page, API_KEY);
    await page.goto(`${h.server.url}/#/settings/api-keys`);
    await expect.poll(() => page.getByTestId('signed-in-as').textContent()).toBe('Signed in as bootstrap-2.');
    await expect.poll(() => page.getByTestId('api-key-row').count()).toBe(2);
    expect(await row(page, 'bootstrap-2').textContent()).toContain('(this session)');
    expect(await row(page, 'bootstrap-1').getByTestId('revoke-key').count()).toBe(0);

    // Signed in, the page shows no sign-in form, and making a key asks for no key.
    expect(await page.getByTestId('api-key').count()).toBe(0);
    expect(await page.getByTestId('confirm-key').count()).toBe(0);
    // A refused name is said under the name field, and makes nothing.
    await page.getByTestId('new-key-name').fill('bootstrap-9');
    await page.getByTestId('create-key').click();
    await expect.poll(() => page.locator('[data-testid="field-error"][data-field="name"]').textContent()).toContain('bootstrap');
    expect((await h.api.as(apiKeyList)('GET', '/api/keys')).body.keys).toHaveLength(2);

    expect(await page.getByTestId('new-key-role').inputValue()).toBe('operator');
    await page.getByTestId('new-key-name').fill('laptop');
    await page.getByTestId('create-key').click();
    await page.getByTestId('new-key').waitFor();
    const key = (await page.getByTestId('new-key').textContent()) ?? '';
    expect(key).toMatch(/^ewk_[A-Za-z0-9_-]{43}$/);
    expect(await row(page, 'laptop').getByTestId('key-last-used').textContent()).toBe('never');
    expect(await row(page, 'laptop').getByTestId('key-created').textContent()).not.toBe('—');
    // Its role and what made it (the session's key) are listed; the page keeps no key.
    expect(await row(page, 'laptop').getByTestId('key-role').textContent()).toBe('operator');
    expect(await row(page, 'laptop').getByTestId('key-made-by').textContent()).toBe('bootstrap-2');
    expect((await h.api.as(apiKeyList)('GET', '/api/keys')).body.keys.find((k) => k.name === 'laptop')).toMatchObject({ roles: ['operator'], created_by: 'bootstrap-2' });
    expect(await page.evaluate(() => Object.keys(localStorage).length + Object.keys(sessionStorage).length)).toBe(0);

    // The key works, and its use shows; once the page is drawn again the key is gone from it.
    expect((await h.api('GET', '/api/workflows', undefined, { 'X-Service-Key': key })).status).toBe(200);
    await page.reload();
    await row(page, 'laptop').waitFor();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    expect(await row(page, 'laptop').getByTestId('key-last-used').textContent()).not.toBe('never');

    // A worker's key, chosen in the form.
    await page.getByTestId('new-key-name').fill('worker box');
    await page.getByTestId('new-key-role').selectOption('worker');
    await page.getByTestId('create-key').click();
    await page.getByTestId('new-key').waitFor();
    expect(await row(page, 'worker box').getByTestId('key-role').textContent()).toBe('worker');
    const workerKey = (await page.getByTestId('new-key').textContent()) ?? '';
    expect((await h.api('GET', '/api/workflows', undefined, { 'X-Service-Key': workerKey })).status).toBe(403);

    // Someone signed in with the new key in another browser.
    const laptop = await browser.newContext();
    try {
      const other = await laptop.newPage();
      await signIn(other, key);
      await other.goto(`${h.server.url}/#/settings`);
      await expect.poll(() => other.getByTestId('signed-in-as').textContent()).toBe('Signed in as laptop.');

      await row(page, 'laptop').getByTestId('revoke-key').click();
      await expect.poll(() => row(page, 'laptop').count()).toBe(0);
      expect((await h.api('GET', '/api/workflows', undefined, { 'X-Service-Key': key })).status).toBe(401);
      // The other browser's session ended with its key: its next page asks it to sign in.
      await other.goto(`${h.server.url}/#/workflows`);
      await other.waitForURL(`${h.server.url}/#/settings`);
      await expect.poll(() => other.getByTestId('signed-in-as').count()).toBe(0);
    } finally {
      await laptop.close();
    }
  });
});
