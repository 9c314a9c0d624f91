import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execution } from '../../src/contract/executions.js';
import { versionList, workflow } from '../../src/contract/workflows.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { Redis } from 'ioredis';
import { runCacheKey } from '../../src/domain/run-cache.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * Dashboard functions whose API routes come from other branches of this round (run after they
 * are merged): running a chosen version (`workflowVersionId` on execute) and a version's cached
 * path (`GET …/versions/{id}/cache`). Done through the dashboard, checked through the API.
 */

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  h = await startHarness({ network: true });
  browser = await launchDashboardBrowser();
  page = await (await browser.newContext()).newPage();
  await signInDashboard(page, `${h.server.url}/#/settings`, API_KEY);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe('dashboard, with the merged routes', () => {
  it('runs a chosen draft version, and by default the newest published one', async () => {
    const made = (await h.api.as(workflow)('POST', '/api/workflows', { name: 'Versions', prompt: 'v1', allowedDomains: ['shop.test'] })).body;
    await h.api('PATCH', `/api/workflows/${made.workflow_uuid}`, { prompt: 'v2', status: 'draft' });
    const versions = (await h.api.as(versionList)('GET', `/api/workflows/${made.workflow_uuid}/versions`)).body.items;
    const draft = versions.find((v) => v.version === 2);
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.getByTestId('execute').click();
    await page.waitForURL(/#\/executions\//);
    const first = decodeURIComponent(page.url().split('/').pop() ?? '');
    expect((await h.api.as(execution)('GET', `/api/executions/${first}`)).body.version).toBe(1);
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.getByTestId('execute-version').selectOption(draft?.workflow_version_uuid ?? '');
    await page.getByTestId('execute').click();
    await page.waitForURL((url) => url.hash.startsWith('#/executions/') && !url.hash.endsWith(first));
    const second = decodeURIComponent(page.url().split('/').pop() ?? '');
    expect((await h.api.as(execution)('GET', `/api/executions/${second}`)).body.version).toBe(2);
  }, 60_000);

  it('shows a version’s cached path: each action, its element, its binding in words, what the last repair changed; or that it has none', async () => {
    const made = (await h.api.as(workflow)('POST', '/api/workflows', { name: 'Cached', prompt: 'p', allowedDomains: ['a.test'] })).body;
    const versionId = made.current_version!.workflow_version_uuid;
    await page.goto(`${h.server.url}/#/workflows/${made.workflow_uuid}`);
    await page.locator('details.cache summary').click();
    await expect.poll(() => page.getByTestId('cache-view').textContent()).toContain('No cached path');
    const redis = new Redis(h.redis.url);
    try {
      await redis.set(runCacheKey('bull', h.queueName, versionId), JSON.stringify({
        format: 'execution-worker/run-cache@4', versionId, fingerprint: 'f', toolType: 'browser_toolset_20260801', createdAt: '2026-12-01T00:00:00.000Z', sourceExecutionId: 'exec-1', input: [],
        steps: [
          [
            { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: 'clerk' }, page: 'http://a.test/admin/login', target: { role: 'textbox', name: 'Username', tag: 'input' }, sources: [{ at: 'value', source: { kind: 'constant', text: 'clerk' } }] },
            { tool: 'type', toolsetName: 'browser', input: {}, page: 'http://a.test/admin/x', focus: { role: 'combobox', name: 'Watcher', tag: 'input' }, sources: [{ at: 'text', source: { kind: 'derived', path: ['watcher'], derivation: { how: 'word', index: 0 } } }], byRepair: true },
          ],
          [
            { tool: 'left_click', toolsetName: 'browser', input: { target: { type: 'ref' } }, page: 'http://a.test/admin/invoices', target: { role: 'link', name: 'Invoice #5 from Cobalt', tag: 'a' }, sources: [{ at: 'target', source: { kind: 'pattern', parts: [{ text: 'Invoice #' }, { path: ['number'] }, { text: ' from ' }, { path: ['vendor'] }] } }] },
            { tool: 'form_input', toolsetName: 'browser', input: { target: { type: 'ref' }, value: 'Net 30' }, page: 'http://a.test/admin/x', target: { role: 'textbox', name: 'Notes', tag: 'textarea' }, guard: { paths: [['notes']], digest: 'd', why: 'literal' } },
          ],
        ],
        repairs: [{ cachedStep: 1, reason: 'no combobox "Watchers" on the page', before: ['type into combobox "Watchers"'], after: ['type ref_4 "Yaw"'] }],
      }));
    } finally {
      redis.disconnect();
    }
    await page.reload();
    await page.locator('details.cache summary').click();
    await expect.poll(() => page.getByTestId('cache-step').count()).toBe(2);
    expect(await page.getByTestId('cache-action').count()).toBe(4);
    expect(await page.getByTestId('cache-binding').allTextContents()).toEqual([
      'value: fixed text of the prompt (“clerk”)',
      'text: the input “watcher”, word 1',
      'the element: found by the name Invoice #{{number}} from {{vendor}}',
      'value: no source (literal); replayed only while the input at “notes” is as in the cached run',
    ]);
    const actions = await page.getByTestId('cache-action').allTextContents();
    expect(actions[0]).toContain('form_input on textbox “Username”');
    expect(actions[1]).toContain('type on combobox “Watcher”');
    expect(actions[1]).toContain('made by the last repair');
    expect(actions[0]).not.toContain('made by the last repair');
    expect(await page.getByTestId('cache-repair').textContent()).toContain('Cached step 1: no combobox "Watchers" on the page');
    await page.getByTestId('clear-cache').click();
    await expect.poll(async () => (await h.api('GET', `/api/workflows/${made.workflow_uuid}/versions/${versionId}/cache`)).status).toBe(404);
  }, 60_000);
});
