import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';

/**
 * Dashboard functions whose API routes come from other branches of this round (run after they
 * are merged): running a chosen version (`workflowVersionId` on execute) and a version's cached
 * path (`GET …/versions/{id}/cache`). Done through the dashboard, checked through the API.
 */

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  h = await startHarness();
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  page = await (await browser.newContext()).newPage();
  await page.goto(`${h.server.url}/#/settings`);
  await page.getByTestId('api-key').fill(API_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('new-workflow').waitFor();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe('dashboard, with the merged routes', () => {
  it('runs a chosen draft version, and by default the newest published one', async () => {
    const made = (await h.call('POST', '/api/workflows', { name: 'Versions', prompt: 'v1', allowedDomains: ['shop.test'] })).body;
    await h.call('PATCH', `/api/workflows/${made.workflow_uuid}`, { prompt: 'v2', status: 'draft' });
    const versions = (await h.call('GET', `/api/workflows/${made.workflow_uuid}/versions`)).body.items as { version: number; workflow_version_uuid: string }[];
    const draft = versions.find((v) => v.version === 2);
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.getByTestId('execute').click();
    await page.waitForURL(/#\/executions\//);
    const first = decodeURIComponent(page.url().split('/').pop() ?? '');
    expect((await h.call('GET', `/api/executions/${first}`)).body.version).toBe(1);
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.getByTestId('execute-version').selectOption(draft?.workflow_version_uuid ?? '');
    await page.getByTestId('execute').click();
    await page.waitForURL((url) => url.hash.startsWith('#/executions/') && !url.hash.endsWith(first));
    const second = decodeURIComponent(page.url().split('/').pop() ?? '');
    expect((await h.call('GET', `/api/executions/${second}`)).body.version).toBe(2);
  }, 60_000);

  it('shows a version’s cached path, or that it has none', async () => {
    const made = (await h.call('POST', '/api/workflows', { name: 'Cached', prompt: 'p', allowedDomains: ['shop.test'] })).body;
    const version = made.current_version.workflow_version_uuid;
    const api = await h.call('GET', `/api/workflows/${made.workflow_uuid}/versions/${version}/cache`);
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.locator('details.cache summary').click();
    if (api.status === 404) await expect.poll(() => page.getByTestId('cache-view').textContent()).toContain('No cached path');
    else await expect.poll(() => page.getByTestId('cache-steps').count()).toBe(1);
  }, 60_000);
});
