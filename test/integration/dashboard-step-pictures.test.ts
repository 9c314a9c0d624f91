import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { encodePng } from '../support/png.js';
import { launchDashboardBrowser, signInDashboard } from '../support/dashboard-browser.js';

/**
 * Each step of the execution page shows its own picture (docs/dashboard.md): a step_screenshot
 * line carries its step and its key, a step whose request carried several pictures shows the
 * newest of them, and a step that got none says it shows an earlier step's. The test plays the
 * worker: the run's logs.jsonl and steps/ are written as the worker writes them, then its end
 * is reported; each picture has its own width, so the one drawn is known.
 */

let h: Harness;
let browser: Browser;
let page: Page;
let artifactsDir: string;

beforeAll(async () => {
  artifactsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'dashboard-step-pictures-'));
  h = await startHarness({ artifactsDir, network: true });
  browser = await launchDashboardBrowser();
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await fs.rm(artifactsDir, { recursive: true, force: true });
});

describe('the pictures of the steps', () => {
  it('shows at each step the newest picture the model got then, and names an earlier one as such', async () => {
    const workflow = (await h.call('POST', '/api/workflows', { name: 'Pictured', prompt: 'Look around', allowedDomains: ['shop.test'] })).body as { workflow_uuid: string };
    const id = (await h.call('POST', `/api/workflows/${workflow.workflow_uuid}/execute`, {})).body.execution_uuid as string;
    expect((await h.call('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
    // Step 1: one picture; step 2: two (its request carried both); step 3: none (its last action brought none).
    const pictures: Array<[step: number, key: string, width: number]> = [[1, 'steps/001.png', 101], [2, 'steps/002-1.png', 102], [2, 'steps/002-2.png', 103]];
    const dir = path.join(artifactsDir, 'executions', id);
    await fs.mkdir(path.join(dir, 'steps'), { recursive: true });
    for (const [, key, width] of pictures) await fs.writeFile(path.join(dir, key), encodePng(width, 60, width));
    const line = (t: number, type: string, fields: Record<string, unknown>) => JSON.stringify({ ts: new Date(Date.now() + t).toISOString(), t, type, executionId: id, ...fields });
    const logs = [
      line(100, 'step_screenshot', { step: 1, key: 'steps/001.png', bytes: 1, mediaType: 'image/png' }),
      line(200, 'model_turn', { step: 1, by: 'model', text: 'First.', latencyMs: 100 }),
      line(250, 'action', { step: 1, by: 'model', tool: 'computer', action: 'left_click', input: { coordinate: [10, 10] }, ok: true, durationMs: 20 }),
      line(300, 'step_screenshot', { step: 2, key: 'steps/002-1.png', bytes: 1, mediaType: 'image/png' }),
      line(300, 'step_screenshot', { step: 2, key: 'steps/002-2.png', bytes: 1, mediaType: 'image/png' }),
      line(400, 'model_turn', { step: 2, by: 'model', text: 'Second.', latencyMs: 100 }),
      line(450, 'action', { step: 2, by: 'model', tool: 'browser', action: 'type', input: { text: 'x' }, ok: true, durationMs: 20 }),
      line(600, 'model_turn', { step: 3, by: 'model', text: 'Third.', latencyMs: 100 }),
    ];
    await fs.writeFile(path.join(dir, 'logs.jsonl'), `${logs.join('\n')}\n`);
    const counters = { durationMs: 700, nSteps: 3, nAgentActions: 2, nScreenshots: 3, outputUrl: null, videoUrl: null, logsUrl: null };
    expect((await h.call('POST', `/api/executions/${id}/completed`, { completedAt: new Date().toISOString(), ...counters })).status).toBe(200);

    await signInDashboard(page, `${h.server.url}/#/settings`, API_KEY);
    await page.goto(`${h.server.url}/#/executions/${id}`);
    const step = (n: number) => page.locator(`[data-testid=step][data-step="${n}"]`);
    await expect.poll(() => page.getByTestId('step').count(), { timeout: 15_000 }).toBe(3);
    const thumb = async (n: number) => {
      const img = step(n).getByTestId('step-thumb');
      await img.scrollIntoViewIfNeeded();
      await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0)).toBe(true);
      return { src: await img.getAttribute('src'), width: await img.evaluate((el: HTMLImageElement) => el.naturalWidth), alt: await img.getAttribute('alt'), from: await img.getAttribute('data-shot-step') };
    };
    const base = `/artifacts/executions/${id}/`;
    expect(await thumb(1)).toEqual({ src: `${base}steps/001.png`, width: 101, alt: 'What the model saw at step 1', from: '1' });
    expect(await thumb(2)).toEqual({ src: `${base}steps/002-2.png`, width: 103, alt: 'What the model saw at step 2', from: '2' });
    expect(await step(2).textContent()).toContain('2 screenshots');
    expect(await thumb(3)).toEqual({ src: `${base}steps/002-2.png`, width: 103, alt: 'No new picture at step 3: the last one, from step 2', from: '2' });
    expect(await step(3).getByTestId('step-thumb').getAttribute('class')).toContain('reused');
  });
});
