import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execution as executionAnswer } from '../../src/contract/executions.js';
import { deliveryList, webhookList } from '../../src/contract/webhooks.js';
import { workflow as workflowAnswer } from '../../src/contract/workflows.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * Settings → Webhooks (docs/dashboard.md) in Chromium, checked through the API: a webhook made in
 * the dashboard with its events and workflow, its secret shown once (the one a real receiver
 * checks the signature with), the deliveries of one with each attempt, "Send again", delete.
 */

let h: Harness;
let browser: Browser;
let page: Page;
let receiver: WebhookReceiver;
const secret = { value: '' };

beforeAll(async () => {
  h = await startHarness({ network: true });
  // The receiver refuses every attempt (500): each shows as an attempt with its status.
  receiver = await startWebhookReceiver(() => secret.value, () => ({ status: 500 }));
  browser = await launchDashboardBrowser();
  page = await (await browser.newContext()).newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  await signInDashboard(page, `${h.server.url}/#/settings`, API_KEY);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await h?.close();
});

describe('Settings → Webhooks', () => {
  it('makes a webhook shown with its secret once, lists its deliveries and attempts, sends one again, and deletes it', async () => {
    const workflow = (await h.api.as(workflowAnswer)('POST', '/api/workflows', { name: 'Hooked', prompt: 'p', allowedDomains: ['a.test'] })).body;
    await page.goto(`${h.server.url}/#/settings`);
    await page.getByTestId('webhook-url').fill(receiver.url);
    await page.getByTestId('webhook-event-execution.completed').uncheck();
    await page.getByTestId('webhook-event-execution.failed').uncheck();
    await page.getByTestId('webhook-event-execution.waiting').uncheck();
    await page.getByTestId('webhook-workflow').selectOption(workflow.workflow_uuid);
    await page.getByTestId('create-webhook').click();
    await page.getByTestId('webhook-secret').waitFor();
    secret.value = (await page.getByTestId('webhook-secret').textContent()) ?? '';
    expect(secret.value).toMatch(/^whsec_/);
    const listed = (await h.api.as(webhookList)('GET', '/api/webhooks')).body.items;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ url: receiver.url, events: ['execution.started'], workflowId: workflow.workflow_uuid });
    expect(await page.getByTestId('webhook-row').textContent()).toContain('Hooked');

    // An execution starts: the receiver hears it, signed with the secret the page showed.
    const execution = (await h.api.as(executionAnswer)('POST', `/api/workflows/${workflow.workflow_uuid}/execute`, {})).body;
    expect((await h.api('POST', `/api/executions/${execution.execution_uuid}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
    const heard = await receiver.next((d) => d.body.type === 'execution.started');
    expect(heard.signatureValid).toBe(true);

    // Its delivery, with the refused attempt.
    const hookId = listed[0]!.id;
    await expect.poll(async () => (await h.api.as(deliveryList)('GET', `/api/webhooks/${hookId}/deliveries`)).body.items[0]?.attempts.length ?? 0).toBeGreaterThan(0);
    await page.reload();
    await page.getByTestId('show-deliveries').click();
    await page.getByTestId('attempt').first().waitFor();
    expect(await page.getByTestId('delivery').textContent()).toContain('execution.started');
    expect(await page.getByTestId('attempt-status').first().textContent()).toBe('500');
    // The secret is not shown again.
    expect(await page.getByTestId('webhook-secret').count()).toBe(0);

    // Send again: a new attempt reaches the receiver.
    const before = receiver.heard.length;
    await page.getByTestId('send-again').click();
    await receiver.next((d) => d.body.type === 'execution.started' && receiver.heard.indexOf(d) >= before);

    await page.getByTestId('delete-webhook').click();
    await expect.poll(() => page.getByTestId('webhook-row').count()).toBe(0);
    expect((await h.api.as(webhookList)('GET', '/api/webhooks')).body.items).toHaveLength(0);
  }, 90_000);

  it('shows an API refusal under the URL field', async () => {
    await page.goto(`${h.server.url}/#/settings`);
    await page.getByTestId('webhook-url').fill('http://169.254.169.254/latest');
    await page.getByTestId('create-webhook').click();
    await expect.poll(() => page.locator('[data-testid="field-error"][data-field="url"]').textContent()).not.toBe('');
    expect((await h.api.as(webhookList)('GET', '/api/webhooks')).body.items).toHaveLength(0);
  }, 60_000);
});
