import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_WORKFLOW, lastObservation, refIn } from '../../demo/workflow.js';
import type { z } from 'zod';
import { loginLink } from '../../src/contract/access.js';
import { execution } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { waitForJob } from '../support/queue-events.js';
import { isFinalCheck, isRepair, pageSeen, stepDone } from '../support/run-cache-requests.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';
import { finish, memberBlock, toolUse, turn, type RecordedRequest, type ScriptedModelServer, type ScriptedTurn } from '../support/scripted-model-server.js';
import { startDaemonStack, type DaemonStack } from '../support/stack.js';

/**
 * A repaired run as the worker (daemon), the local service and its execution page show it, on
 * real Chromium, Redis and the scripted model: a workflow run once with the model, then again on
 * the shop whose order button was renamed and moved. The repeat's timeline marks the replayed
 * steps `from cache` and the repaired one `repair`, with what the earlier run did there and what
 * the repair did instead; `output.json` counts the repaired step and `logs.jsonl` its actions.
 */

const KEY = 'dashboard-repair-key';

let stack: DaemonStack<ScriptedModelServer>;
let browser: Browser;
let page: Page;

/** A model that acts on the shop as it is shown, its input values by name; it answers a repair and the final check too. */
function shopModel(request: RecordedRequest): ScriptedTurn {
  const seen = pageSeen(request);
  const confirmed = /Order (\S+) confirmed/.exec(lastObservation(request.body))?.[1];
  if (isFinalCheck(request)) return toolUse('verify_replay', confirmed ? { matches: true, reason: `Order ${confirmed} is confirmed.`, output: { orderId: confirmed } } : { matches: false, reason: 'No order.' });
  if (confirmed) return isRepair(request) ? turn(stepDone()) : finish('completed', { orderId: confirmed });
  const ref = (role: string, name: string) => ({ type: 'ref', ref: refIn(seen, role, name) });
  if (seen.includes('textbox "User"')) {
    return turn(
      memberBlock('form_input', { target: ref('textbox', 'User'), value: '{{user}}' }),
      memberBlock('form_input', { target: ref('textbox', 'Password'), value: '{{password}}' }),
      memberBlock('left_click', { target: ref('button', 'Sign in') }),
      memberBlock('read_page', { filter: 'interactive' }),
    );
  }
  const button = seen.includes('button "Submit order"') ? 'Submit order' : 'Place order';
  // Asked to repair the click: the button as it is called now, then step_done.
  if (isRepair(request)) return turn(memberBlock('left_click', { target: ref('button', button) }), memberBlock('get_page_text'), stepDone('Clicked the renamed order button.'));
  return turn(memberBlock('form_input', { target: ref('textbox', 'Reference'), value: '{{reference}}' }), memberBlock('left_click', { target: ref('button', button) }), memberBlock('get_page_text'));
}

beforeAll(async () => {
  stack = await startDaemonStack({ name: 'dashboard-repair', key: KEY, model: shopModel, shop: { sequentialOrders: true }, env: { WORKER_CONCURRENCY: '1', VIDEO_ENABLED: 'false' } });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** A request to the local API that must succeed, its answer read with the contract's schema. */
async function call<S extends z.ZodType>(schema: S, method: string, route: string, body?: unknown): Promise<z.input<S>> {
  const answer = await stack.call.as(schema)(method, route, body);
  expect(answer.status).toBeLessThan(300);
  return answer.body;
}

async function execute(workflowId: string, reference: string): Promise<string> {
  const executed = await call(execution, 'POST', `/api/workflows/${workflowId}/execute`, { inputPayload: { user: 'ann', password: 'pw-Secret-77', reference } });
  const id = String(executed.execution_uuid);
  await waitForJob(stack.queue, id, stack.redis.url);
  return id;
}

const artifact = (id: string, name: string) => readFile(path.join(stack.dir, 'artifacts', 'executions', id, name), 'utf8');

describe('a repaired run on the execution page', () => {
  it('marks the replayed steps and the repaired one, with what the earlier run did there and what the repair did', async () => {
    const created = await call(workflow, 'POST', '/api/workflows', DEMO_WORKFLOW(`${stack.shop.origin}/`));
    const workflowId = String(created.workflow_uuid);
    await execute(workflowId, 'PO-1');
    stack.shop.options.renamedButton = true;
    const requestsBefore = stack.model.requests.length;
    const id = await execute(workflowId, 'PO-2');
    // The repair and the final check.
    expect(stack.model.requests.slice(requestsBefore).map(isRepair)).toEqual([true, false]);
    const output = JSON.parse(await artifact(id, 'output.json')) as { status: string; cache: Record<string, unknown>; counters: { nSteps: number } };
    expect(output).toMatchObject({ status: 'completed', cache: { used: true, repairedSteps: 1, modelSteps: 1, fallbackAtStep: null } });
    expect(stack.shop.forms.at(-1)).toEqual({ path: '/order', fields: { reference: 'PO-2', quantity: '1' } });
    const logs = (await artifact(id, 'logs.jsonl')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs.filter((l) => l.type === 'action').map((l) => l.by)).toEqual(['cache', 'cache', 'cache', 'cache', 'repair', 'repair']);

    const link = await call(loginLink, 'POST', '/api/login-links', { route: `#/executions/${id}` });
    await page.goto(link.url);
    const steps = page.getByTestId('step');
    await expect.poll(() => steps.count(), { timeout: 15_000 }).toBe(output.counters.nSteps);
    const tags = await steps.getByTestId('step-by').allTextContents();
    expect(tags).toEqual(['from cache', 'from cache', 'repair']);
    // The summary counts the repaired step and says what the final check found.
    expect(await page.getByTestId('cache').textContent()).toMatch(/1 step repaired, .*final check: the page shows the input/);
    const repaired = page.getByTestId('step-repair');
    expect(await repaired.count()).toBe(1);
    expect(await repaired.textContent()).toContain('Repair of the earlier run\'s step 2 — no button "Place order" on the page');
    expect(await repaired.getByTestId('repair-before').textContent()).toContain('left_click on button "Place order"');
    expect(await repaired.getByTestId('repair-after').textContent()).toContain('button "Submit order"');
    expect(await repaired.getByTestId('repair-outcome').textContent()).toBe('The replay went on to the final check.');
    // The repair's step has its picture: what the model saw when it was asked.
    expect(await page.locator('[data-testid=step][data-step="3"]').getByTestId('step-thumb').getAttribute('src')).toBe(`/artifacts/executions/${id}/steps/003.jpg`);
    expect(await page.locator('body').textContent()).not.toContain('pw-Secret-77');
    if (process.env.DASHBOARD_SHOTS_DIR) await page.screenshot({ path: path.join(process.env.DASHBOARD_SHOTS_DIR, 'repair.png'), fullPage: true });
  });
});
