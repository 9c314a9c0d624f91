import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageReport, type ModelUsage } from '../../src/domain/usage.js';
import { costOf, pricesOf } from '../../src/model/prices.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import type { TokenUsage } from '../../src/contract/recording.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * The cost of executions and workflows (docs/api.md#cost) in the local API and the dashboard, in
 * real Chromium against real Redis. The test plays the worker: each run's output.json is the
 * worker's own usage report (each model at its own prices), written before the run's end is
 * reported, as the worker does.
 */

let h: Harness;
let browser: Browser;
let page: Page;
let artifactsDir: string;

beforeAll(async () => {
  artifactsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'dashboard-cost-'));
  h = await startHarness({ artifactsDir, network: true });
  browser = await launchDashboardBrowser();
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await fs.rm(artifactsDir, { recursive: true, force: true });
});

const usage = (input: number, output: number, cacheRead: number, cacheWrite: number): TokenUsage => ({ inputTokens: input, outputTokens: output, cacheReadInputTokens: cacheRead, cacheCreationInputTokens: cacheWrite });

/** output.json's usage for requests to several models, as the worker reports it (domain/usage.ts). */
function reportOf(requests: Array<[model: string, used: TokenUsage]>) {
  const models = new Map<string, ModelUsage>();
  const total = usage(0, 0, 0, 0);
  let cost = 0;
  for (const [model, used] of requests) {
    const { prices, source } = pricesOf(model);
    const usd = costOf(prices, used);
    cost += usd;
    const before = models.get(model) ?? { ...usage(0, 0, 0, 0), requests: 0, costUsd: 0, prices: source };
    models.set(model, {
      inputTokens: before.inputTokens + used.inputTokens,
      outputTokens: before.outputTokens + used.outputTokens,
      cacheReadInputTokens: before.cacheReadInputTokens + used.cacheReadInputTokens,
      cacheCreationInputTokens: before.cacheCreationInputTokens + used.cacheCreationInputTokens,
      requests: before.requests + 1,
      costUsd: before.costUsd + usd,
      prices: source,
    });
    for (const k of Object.keys(total) as Array<keyof TokenUsage>) total[k] += used[k];
  }
  return usageReport(total, cost, models);
}

/** Executes the workflow and plays the worker: started, output.json written (unless none), then completed or failed. */
async function runOnce(workflowId: string, end: 'completed' | 'failed', report: ReturnType<typeof reportOf> | undefined): Promise<string> {
  const executed = await h.call('POST', `/api/workflows/${workflowId}/execute`, {});
  expect(executed.status).toBe(201);
  const id = executed.body.execution_uuid as string;
  expect((await h.call('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
  if (report) {
    const dir = path.join(artifactsDir, 'executions', id);
    await fs.mkdir(dir, { recursive: true });
    const doc = { status: end, output: null, error: end === 'failed' ? { code: 'budget_exceeded', message: 'the run used 40,000 tokens of its budget of 40,000' } : null, usage: report, budget: { tokens: 40_000, usd: null } };
    await fs.writeFile(path.join(dir, 'output.json'), JSON.stringify(doc));
  }
  const counters = { durationMs: 1_000, nSteps: 2, nAgentActions: 1, nScreenshots: 2, outputUrl: null, videoUrl: null, logsUrl: null };
  const body = end === 'completed' ? { completedAt: new Date().toISOString(), ...counters } : { failedAt: new Date().toISOString(), error: { code: 'budget_exceeded', message: 'over budget' }, ...counters };
  expect((await h.call('POST', `/api/executions/${id}/${end}`, body)).status).toBe(200);
  return id;
}

describe('cost per execution and per workflow', () => {
  it('each execution\'s cost at its models\' own prices; a workflow\'s cost is the sum of its executions\'; the dashboard shows both', async () => {
    const workflow = (await h.call('POST', '/api/workflows', { name: 'Costed', prompt: 'Look around', allowedDomains: ['shop.test'] })).body as { workflow_uuid: string };
    const other = (await h.call('POST', '/api/workflows', { name: 'Other', prompt: 'Elsewhere', allowedDomains: ['shop.test'] })).body as { workflow_uuid: string };
    // An Opus 5.5 run with a Haiku final check, a Sonnet 5 run that failed on its budget, a run that left no output.json.
    const first = reportOf([
      ['claude-opus-5-5', usage(12_000, 800, 0, 9_000)],
      ['claude-opus-5-5', usage(1_500, 600, 9_000, 1_200)],
      ['claude-haiku-4-5', usage(2_000, 90, 0, 0)],
    ]);
    const second = reportOf([['claude-sonnet-5', usage(30_000, 2_000, 0, 8_000)]]);
    const a = await runOnce(workflow.workflow_uuid, 'completed', first);
    const b = await runOnce(workflow.workflow_uuid, 'failed', second);
    const c = await runOnce(workflow.workflow_uuid, 'failed', undefined);
    await runOnce(other.workflow_uuid, 'completed', reportOf([['claude-sonnet-5', usage(5_000, 100, 0, 0)]]));

    // Each model at its own prices: the same tokens at one model's prices would not add up to this.
    expect(first.byModel.map((m) => m.model)).toEqual(['claude-opus-5-5', 'claude-haiku-4-5']);
    expect(first.estimatedCostUsd).not.toBeCloseTo(costOf(pricesOf('claude-haiku-4-5').prices, usage(15_500, 1_490, 9_000, 10_200)), 4);

    const executions = await Promise.all([a, b, c].map(async (id) => (await h.call('GET', `/api/executions/${id}`)).body as { cost_usd: number | null }));
    expect(executions.map((e) => e.cost_usd)).toEqual([first.estimatedCostUsd, second.estimatedCostUsd, null]);
    const sum = Math.round((first.estimatedCostUsd! + second.estimatedCostUsd!) * 1_000_000) / 1_000_000;
    const costed = (await h.call('GET', `/api/workflows/${workflow.workflow_uuid}`)).body as { cost_usd: number; costed_executions: number };
    expect(costed).toMatchObject({ cost_usd: sum, costed_executions: 2 });
    // The list answers the same sums; a workflow's executions only.
    const list = (await h.call('GET', '/api/workflows')).body.items as Array<{ workflow_uuid: string; cost_usd: number; costed_executions: number }>;
    expect(list.find((w) => w.workflow_uuid === workflow.workflow_uuid)).toMatchObject({ cost_usd: sum, costed_executions: 2 });
    expect(list.find((w) => w.workflow_uuid === other.workflow_uuid)).toMatchObject({ costed_executions: 1 });
    // Another end reported for an ended run is refused and changes nothing, the sum included.
    const again = await h.call('POST', `/api/executions/${a}/completed`, { completedAt: new Date().toISOString(), durationMs: 1, nSteps: 1, nAgentActions: 1, nScreenshots: 1, outputUrl: null, videoUrl: null, logsUrl: null });
    expect(again.status).toBe(409);
    expect((await h.call('GET', `/api/workflows/${workflow.workflow_uuid}`)).body).toMatchObject({ cost_usd: sum, costed_executions: 2 });

    // The dashboard.
    await signInDashboard(page, h.server.url, API_KEY);
    const usd = (n: number) => (n >= 1 ? `$${n.toFixed(2)}` : `$${n.toFixed(4)}`);
    const row = page.getByTestId('workflow-row').filter({ hasText: 'Costed' });
    await expect.poll(() => row.getByTestId('workflow-cost').textContent()).toBe(`${usd(sum)} over 2 executions`);

    await page.goto(`${h.server.url}/#/workflows/${workflow.workflow_uuid}`);
    await expect.poll(() => page.getByTestId('workflow-cost').textContent()).toBe(`Cost: ${usd(sum)} over 2 executions`);
    const costs = page.locator('[data-testid=execution-row]');
    await expect.poll(() => costs.count()).toBe(3);
    const shown = await Promise.all([a, b, c].map((id) => page.locator(`[data-testid=execution-row][data-id="${id}"]`).getByTestId('execution-cost').textContent()));
    expect(shown).toEqual([usd(first.estimatedCostUsd!), usd(second.estimatedCostUsd!), '—']);

    await page.goto(`${h.server.url}/#/executions/${a}`);
    await expect.poll(() => page.getByTestId('cost').textContent()).toBe(usd(first.estimatedCostUsd!));
    const byModel = await page.getByTestId('cost-by-model').textContent();
    expect(byModel).toContain(`claude-opus-5-5 ${usd(first.byModel[0]!.costUsd)} (2 requests)`);
    expect(byModel).toContain(`claude-haiku-4-5 ${usd(first.byModel[1]!.costUsd)} (1 request)`);
    expect(byModel).toContain('Budget: 40000 tokens.');
  });
});
