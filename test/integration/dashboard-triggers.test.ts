import { randomBytes, randomUUID } from 'node:crypto';
import { Job, Queue } from 'bullmq';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execution as executionAnswer } from '../../src/contract/executions.js';
import { workflow as workflowAnswer, workflowList } from '../../src/contract/workflows.js';
import { parseProfileKeys } from '../../src/domain/profile-crypto.js';
import { schedulesQueueName } from '../../src/local-service/schedules.js';
import { startLocalServer, type LocalServer } from '../../src/local-service/server.js';
import { API_KEY, silentLogger } from '../contract/local-api-harness.js';
import { answerAs } from '../support/answer-as.js';
import { httpCall } from '../support/call.js';
import { openQueueEvents } from '../support/queue-events.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * The dashboard's triggers in real Chromium against the local API on real Redis: a version's
 * status, trigger and next run, publishing and unpublishing from the page, saving a scheduled
 * draft from the form, and the mark of an execution a schedule made.
 */

let redis: TestRedis;
let server: LocalServer;
let ticks: Queue;
let executions: Queue;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  redis = await startRedis();
  const queueName = `executions-${randomUUID().slice(0, 8)}`;
  // A default input below has a secret: kept sealed with these keys (docs/secrets.md#at-rest).
  const inputKeys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
  server = await startLocalServer({ port: 0, apiKeys: [API_KEY], redisUrl: redis.url, queueName, queuePrefix: 'bull', logger: silentLogger, allowEverySecond: true, inputKeys });
  ticks = new Queue(schedulesQueueName(queueName), { connection: { url: redis.url }, prefix: 'bull' });
  executions = new Queue(queueName, { connection: { url: redis.url }, prefix: 'bull' });
  browser = await launchDashboardBrowser();
  page = await browser.newPage();
  await signInDashboard(page, server.url, API_KEY);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled([server?.close(), ticks?.close(), executions?.close()]);
  await redis?.stop();
});

const call = httpCall(() => server.url, { 'X-Service-Key': API_KEY });

describe('dashboard triggers', () => {
  it('shows a scheduled version, its next run and the executions its schedule made; unpublishes and publishes it', async () => {
    const events = await openQueueEvents(ticks, redis.url);
    let workflowId: string;
    try {
      const created = answerAs(workflowAnswer, await call('POST', '/api/workflows', { name: 'Every second', prompt: 'p', allowedDomains: ['a.test'], triggerType: 'schedule', scheduleExpression: '* * * * * *' }));
      workflowId = created.workflow_uuid;
      // A tick, awaited through BullMQ's own events: the scheduler names its next job.
      const next = (await ticks.getJobScheduler(workflowId))?.next;
      const tick = await Job.fromId(ticks, `repeat:${workflowId}:${next}`);
      expect(tick).toBeDefined();
      await tick?.waitUntilFinished(events, 60_000);
    } finally {
      await events.close();
    }

    await page.goto(`${server.url}/#/workflows/${workflowId}`);
    await expect.poll(() => page.getByTestId('current-trigger').textContent()).toMatch(/^published · schedule · \* \* \* \* \* \* · next run /);
    const row = page.getByTestId('version-row').first();
    expect(await row.getByTestId('version-trigger').textContent()).toBe('schedule · * * * * * *');
    expect(await row.getByTestId('version-next-run').textContent()).not.toBe('—');
    await expect.poll(() => page.getByTestId('trigger-schedule').count()).toBeGreaterThan(0);

    // The execution page says what made it.
    const executionId = await page.getByTestId('execution-row').first().getAttribute('data-id');
    await page.goto(`${server.url}/#/executions/${executionId}`);
    await expect.poll(() => page.getByTestId('execution-trigger').textContent()).toContain('schedule');

    await page.goto(`${server.url}/#/workflows/${workflowId}`);
    await page.getByTestId('unpublish-version').click();
    await expect.poll(() => page.getByTestId('version-status').first().textContent()).toContain('draft');
    expect(await page.getByTestId('version-next-run').first().textContent()).toBe('—');
    expect(await ticks.getJobScheduler(workflowId)).toBeUndefined();

    await page.getByTestId('publish-version').click();
    await expect.poll(() => page.getByTestId('version-status').first().textContent()).toContain('published');
    expect(await ticks.getJobScheduler(workflowId)).toMatchObject({ pattern: '* * * * * *' });
    await call('DELETE', `/api/workflows/${workflowId}`);
  }, 120_000);

  it('saves a scheduled draft from the form, and shows the 422 of a bad expression', async () => {
    await page.goto(`${server.url}/#/workflows/new`);
    const form = page.getByTestId('workflow-form');
    await form.locator('[name=name]').fill('Weekday report');
    await form.locator('[name=prompt]').fill('Send the report');
    await form.locator('[name=allowedDomains]').fill('shop.test');
    await form.getByTestId('trigger-type').selectOption('schedule');
    await form.getByTestId('schedule-expression').fill('0 9 * *');
    await page.getByTestId('save-workflow').click();
    const expressionError = form.locator('[data-testid=field-error][data-field=scheduleExpression]');
    await expect.poll(() => expressionError.textContent()).toContain('a cron expression has 5 fields');

    await form.getByTestId('schedule-expression').fill('TZ=Europe/Paris 0 9 * * 1-5');
    // Gone once the field is edited.
    expect(await expressionError.isVisible()).toBe(false);
    await form.getByTestId('configuration').fill('{"inputPayload": {"week": "current"}}');
    await form.getByTestId('save-as-draft').check();
    await page.getByTestId('save-workflow').click();
    await expect.poll(() => page.getByTestId('workflow-name').textContent()).toBe('Weekday report');
    await expect.poll(() => page.getByTestId('current-trigger').textContent()).toBe('draft: not executed · schedule · TZ=Europe/Paris 0 9 * * 1-5');

    const workflow = answerAs(workflowList, await call('GET', '/api/workflows')).items.find((w) => w.name === 'Weekday report');
    expect(workflow?.current_version).toMatchObject({
      status: 'draft',
      trigger_type: 'schedule',
      schedule_expression: 'TZ=Europe/Paris 0 9 * * 1-5',
      configuration: { inputPayload: { week: 'current' } },
      next_run_at: null,
    });
  }, 60_000);

  it('keeps a secret of the default input through an edit in the form, which only ever shows its placeholder', async () => {
    const payloadSchema = { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', writeOnly: true } } };
    const created = answerAs(workflowAnswer, await call('POST', '/api/workflows', { name: 'Login', prompt: 'Log in', allowedDomains: ['a.test'], payloadSchema, configuration: { inputPayload: { user: 'ann', password: 's3cret' } } }));
    const id = created.workflow_uuid;
    await page.goto(`${server.url}/#/workflows/${id}`);
    const form = page.getByTestId('workflow-form');
    await expect.poll(() => form.getByTestId('configuration').inputValue()).toContain('{{password}}');
    expect(await page.content()).not.toContain('s3cret');
    await form.locator('[name=prompt]').fill('Log in, then out');
    await page.getByTestId('save-workflow').click();
    await expect.poll(async () => answerAs(workflowAnswer, await call('GET', `/api/workflows/${id}`)).current_version?.version).toBe(2);

    const execution = answerAs(executionAnswer, await call('POST', `/api/workflows/${id}/execute`));
    expect(execution.input_payload).toEqual({ user: 'ann', password: '{{password}}' });
    expect((await executions.getJob(execution.execution_uuid))?.data.inputPayload).toEqual({ user: 'ann', password: 's3cret' });
  }, 60_000);
});
