import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execution, executionList } from '../../src/contract/executions.js';
import { workflow, workflowList } from '../../src/contract/workflows.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';

/**
 * Every page of the dashboard in real Chromium against the local API on real Redis, on a desktop
 * (1280 px) and a phone (390 px): an axe-core scan (no serious or critical violation), nothing
 * wider than the screen, and a screenshot of each kept under .test-output/dashboard/. Then the
 * functions this round gave a face, each done through the dashboard and checked through the API.
 */

const AXE_SOURCE = (createRequire(import.meta.url)('axe-core') as { source: string }).source;
const SHOTS = path.resolve('.test-output/dashboard');

let h: Harness;
let browser: Browser;
let page: Page;
let workflowId: string;
let scheduledId: string;
let executionId: string;

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  h = await startHarness({ network: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  page = await (await browser.newContext()).newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  const made = await h.api.as(workflow)('POST', '/api/workflows', { name: 'Order total', prompt: 'Find the order total', allowedDomains: ['shop.test'], payloadSchema: { type: 'object', properties: { order: { type: 'string' } } } });
  workflowId = made.body.workflow_uuid;
  const scheduled = await h.api.as(workflow)('POST', '/api/workflows', { name: 'Weekday report', prompt: 'Send the report', allowedDomains: ['shop.test'], triggerType: 'schedule', scheduleExpression: 'TZ=Europe/Paris 0 9 * * 1-5' });
  scheduledId = scheduled.body.workflow_uuid;
  executionId = (await h.api.as(execution)('POST', `/api/workflows/${workflowId}/execute`, { inputPayload: { order: 'A-1' } })).body.execution_uuid;
  // A webhook, for the Settings → Webhooks page (never delivered to: the execution does not start here).
  const hook = await h.api('POST', '/api/webhooks', { url: 'http://127.0.0.1:9/execution-worker', events: ['execution.completed', 'execution.failed'], workflowId });
  expect(hook.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function signIn(): Promise<void> {
  await page.goto(`${h.server.url}/#/settings`);
  await page.getByTestId('api-key').fill(API_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('new-workflow').waitFor();
}

async function axeProblems(p: Page): Promise<string[]> {
  // Run through the DevTools protocol, which the page's CSP (no inline scripts) does not govern.
  await p.evaluate(AXE_SOURCE);
  const found = await p.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown }[] }[] }> } }).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.targets.join(' ')}`);
}

const PAGES: { name: string; hash: () => string; ready: string }[] = [
  { name: 'workflows', hash: () => '#/workflows', ready: '[data-testid=workflow-row]' },
  { name: 'workflow', hash: () => `#/workflows/${workflowId}`, ready: '[data-testid=execute-form]' },
  { name: 'workflow-scheduled', hash: () => `#/workflows/${scheduledId}`, ready: '[data-testid=current-trigger]' },
  { name: 'new-workflow', hash: () => '#/workflows/new', ready: '[data-testid=workflow-form]' },
  { name: 'executions', hash: () => '#/executions', ready: '[data-testid=execution-row]' },
  { name: 'profiles', hash: () => '#/profiles', ready: '[data-testid=profiles-how-to]' },
  { name: 'execution', hash: () => `#/executions/${executionId}`, ready: '[data-testid=status]' },
  { name: 'settings', hash: () => '#/settings', ready: '[data-testid=api-keys]' },
  { name: 'webhooks', hash: () => '#/settings/webhooks', ready: '[data-testid=webhook-row]' },
  { name: 'not-found', hash: () => '#/executions/00000000-0000-4000-8000-000000000000', ready: '[data-testid=not-found]' },
];

describe('every dashboard page', () => {
  it('has no serious accessibility problem, fits a phone, and is kept as a screenshot', async () => {
    await signIn();
    const problems: string[] = [];
    for (const [device, width] of [['desktop', 1280], ['phone', 390]] as const) {
      await page.setViewportSize({ width, height: 844 });
      for (const p of PAGES) {
        await page.goto(`${h.server.url}/${p.hash()}`);
        await page.locator(p.ready).first().waitFor();
        await page.screenshot({ path: path.join(SHOTS, `${p.name}-${device}.png`), fullPage: true });
        const wide = await page.evaluate(() => document.documentElement.scrollWidth);
        if (wide > width) problems.push(`${p.name} at ${width} px is ${wide} px wide`);
        for (const v of await axeProblems(page)) problems.push(`${p.name} (${device}): ${v}`);
      }
    }
    expect(problems).toEqual([]);
  }, 240_000);
});

describe('dashboard functions', () => {
  it('names the time zone of a schedule’s next run', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${h.server.url}/#/workflows/${scheduledId}`);
    const nextRun = (await h.api.as(workflow)('GET', `/api/workflows/${scheduledId}`)).body.current_version?.next_run_at;
    expect(nextRun).toBeTruthy();
    await expect.poll(() => page.getByTestId('current-trigger').textContent()).toContain('(Europe/Paris)');
    const hour = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', minute: '2-digit' }).format(new Date(nextRun!));
    expect(hour).toBe('09:00');
    expect(await page.getByTestId('current-trigger').textContent()).toContain('09:00');
  }, 60_000);

  it('filters the executions by status and workflow, with their error column', async () => {
    await page.goto(`${h.server.url}/#/executions`);
    await page.getByTestId('execution-row').first().waitFor();
    const queued = (await h.api.as(executionList)('GET', '/api/executions?status=queued')).body.total;
    await page.getByTestId('filter-status').selectOption('queued');
    await page.waitForURL(/status=queued/);
    await expect.poll(() => page.getByTestId('execution-row').count()).toBe(queued);
    await page.getByTestId('filter-status').selectOption('failed');
    await expect.poll(() => page.locator('main').textContent()).toContain('No execution yet.');
    await page.getByTestId('filter-status').selectOption('');
    await page.getByTestId('filter-workflow').selectOption(scheduledId);
    await expect.poll(() => page.locator('main').textContent()).toContain('No execution yet.');
    expect((await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${scheduledId}`)).body.total).toBe(0);
  }, 60_000);

  it('saves every other specification field from the form, and shows an error next to its field', async () => {
    await page.goto(`${h.server.url}/#/workflows/new`);
    const form = page.getByTestId('workflow-form');
    await form.locator('[name=name]').fill('All fields');
    await form.locator('[name=prompt]').fill('Do it');
    await form.locator('[name=allowedDomains]').fill('*.com');
    await page.getByTestId('save-workflow').click();
    const domains = form.locator('[data-testid=field-error][data-field=allowedDomains]');
    await expect.poll(() => domains.textContent()).toContain('would allow a whole public suffix');
    expect(await domains.textContent()).not.toContain('body.');
    await form.locator('[name=allowedDomains]').fill('shop.test');
    expect(await domains.isVisible()).toBe(false);
    await form.getByTestId('toolset').selectOption('browser');
    await form.getByTestId('allowJavascript').selectOption('true');
    await form.getByTestId('cache').selectOption('false');
    await form.getByTestId('profile').fill('shop-admin');
    await form.getByTestId('approvals').fill('Pay an invoice\nDelete a user');
    await form.getByTestId('humanTimeoutMs').fill('60000');
    await form.getByTestId('budget-tokens').fill('50000');
    await form.getByTestId('budget-usd').fill('0.5');
    await page.getByTestId('save-workflow').click();
    await expect.poll(() => page.getByTestId('workflow-name').textContent()).toBe('All fields');
    const w = (await h.api.as(workflowList)('GET', '/api/workflows')).body.items.find((x) => x.name === 'All fields');
    expect(w?.current_version?.specification).toMatchObject({ toolset: 'browser', allowJavascript: true, cache: false, profile: 'shop-admin', approvals: ['Pay an invoice', 'Delete a user'], humanTimeoutMs: 60000, budget: { tokens: 50000, usd: 0.5 } });
  }, 60_000);

  it('shows one 404 page for an unknown id, and “Sign in” in the nav once signed out', async () => {
    await page.goto(`${h.server.url}/#/executions/00000000-0000-4000-8000-000000000000`);
    await page.getByTestId('not-found').waitFor();
    expect(await page.locator('main').textContent()).not.toMatch(/Waiting for the run|Loading…/);
    expect(await page.locator('header nav a[aria-current=page]').textContent()).toBe('Executions');
    await page.getByTestId('nav-session').click();
    await expect.poll(() => page.getByTestId('nav-session').textContent()).toBe('Sign in');
    expect((await fetch(`${h.server.url}/api/session`)).status).toBe(401);
  }, 60_000);
});
