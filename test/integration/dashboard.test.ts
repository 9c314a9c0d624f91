import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';

/**
 * The dashboard in real Chromium against the local API on real Redis. The worker is not part
 * of this test: the test plays its part with docs/api.md reports and a real mp4.
 */

const run = promisify(execFile);

let h: Harness;
let browser: Browser;
let page: Page;
let artifactsDir: string;

beforeAll(async () => {
  artifactsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'dashboard-test-'));
  h = await startHarness({ artifactsDir, network: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  page = await browser.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await fs.rm(artifactsDir, { recursive: true, force: true });
});

/** A 1 s real H.264 video, as the worker's recorder would leave it. */
async function writeArtifacts(executionId: string): Promise<void> {
  const dir = path.join(artifactsDir, 'executions', executionId);
  await fs.mkdir(dir, { recursive: true });
  await run('ffmpeg', [
    '-hide_banner', '-loglevel', 'error',
    // A synthetic test pattern: 1 s, 320x240, 10 fps.
    '-f', 'lavfi', '-i', 'testsrc=duration=1:size=320x240:rate=10',
    '-c:v', 'libx264',
    // yuv420p: the pixel format every browser decodes.
    '-pix_fmt', 'yuv420p',
    // The index at the front, so playback starts before the whole file is read.
    '-movflags', '+faststart',
    path.join(dir, 'video.mp4'),
  ]);
  await fs.writeFile(path.join(dir, 'steps.vtt'), 'WEBVTT\n\n00:00:00.000 --> 00:00:00.900\nStep 1: open the shop\n');
  await fs.writeFile(path.join(dir, 'logs.jsonl'), `${JSON.stringify({ type: 'run_started', time: '2025-05-01T10:00:00.000Z' })}\n${JSON.stringify({ type: 'action', name: 'left_click' })}\n`);
  await fs.mkdir(path.join(dir, 'downloads'));
  await fs.writeFile(path.join(dir, 'downloads', 'orders 2024.csv'), 'order,total\nA-1,42.00\n');
  const download = { name: 'orders 2024.csv', url: 'http://shop.test/export', bytes: 23, sha256: '0'.repeat(64), contentType: 'text/csv', artifactUrl: null };
  await fs.writeFile(path.join(dir, 'output.json'), JSON.stringify({ status: 'completed', output: { orderTotal: '42.00' }, error: null, downloads: [download] }));
}

describe('dashboard', () => {
  it('asks for the key, creates a workflow, executes it, follows it to completion and plays its video', async () => {
    await page.goto(h.server.url);
    // A wrong key is refused and leaves the browser signed out.
    await page.getByTestId('api-key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('not one of the API keys');
    expect((await page.context().cookies()).map((c) => c.name)).not.toContain(`ew_session_${new URL(h.server.url).port}`);

    await page.getByTestId('api-key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The page keeps no key: the session is an HttpOnly cookie.
    await page.getByTestId('new-workflow').waitFor();
    expect(await page.evaluate(() => ({ cookie: document.cookie, stored: Object.keys(localStorage).length }))).toEqual({ cookie: '', stored: 0 });
    expect((await page.context().cookies()).find((c) => c.name === `ew_session_${new URL(h.server.url).port}`)).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    await page.getByTestId('new-workflow').click();
    const form = page.getByTestId('workflow-form');
    await form.locator('[name=name]').fill('Order total');
    await form.locator('[name=prompt]').fill('Find the order total');
    await form.locator('[name=allowedDomains]').fill('shop.test, *.cdn.test');
    await form.locator('[name=payloadSchema]').fill('{"type":"object","required":["order"],"properties":{"order":{"type":"string"}}}');
    await page.getByTestId('save-workflow').click();
    await expect.poll(() => page.getByTestId('workflow-name').textContent()).toBe('Order total');

    const workflows = (await h.call('GET', '/api/workflows')).body.items as { workflow_uuid: string; name: string; current_version: { specification: unknown } }[];
    const workflow = workflows.find((w) => w.name === 'Order total');
    expect(workflow?.current_version.specification).toEqual({
      prompt: 'Find the order total',
      allowedDomains: ['shop.test', '*.cdn.test'],
      payloadSchema: { type: 'object', required: ['order'], properties: { order: { type: 'string' } } },
    });

    // A payload failing the schema shows the API's 422 detail next to the payload field, in its words.
    await page.getByTestId('input-payload').fill('{"order": 7}');
    await page.getByTestId('execute').click();
    const payloadError = page.locator('[data-testid=field-error][data-field=inputPayload]');
    await expect.poll(() => payloadError.textContent()).toMatch(/^order: /);

    await page.getByTestId('input-payload').fill('{"order": "A-1"}');
    await page.getByTestId('execute').click();
    await page.waitForURL(/#\/executions\/[0-9a-f-]+$/);
    const executionId = page.url().split('/').pop() as string;
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('queued');
    const job = await h.queue.getJob(executionId);
    expect(job?.data).toMatchObject({ executionId, workflowId: workflow?.workflow_uuid, inputPayload: { order: 'A-1' } });

    // The worker's part.
    expect((await h.call('POST', `/api/executions/${executionId}/started`, { startedAt: new Date().toISOString() })).status).toBe(200);
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 15_000 }).toBe('running');
    await writeArtifacts(executionId);
    const completed = await h.call('POST', `/api/executions/${executionId}/completed`, {
      completedAt: new Date().toISOString(),
      durationMs: 1_000,
      nSteps: 3,
      nAgentActions: 2,
      nScreenshots: 3,
      outputUrl: null,
      videoUrl: null,
      logsUrl: null,
    });
    expect(completed.status).toBe(200);

    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 15_000 }).toBe('completed');
    await expect.poll(() => page.getByTestId('counters').textContent()).toBe('3 steps · 2 actions · 3 screenshots');
    const video = page.getByTestId('video');
    await video.waitFor();
    expect(await video.locator('track').getAttribute('src')).toBe(`/artifacts/executions/${executionId}/steps.vtt`);
    await expect.poll(() => page.getByTestId('output').textContent()).toContain('42.00');
    expect(await page.getByTestId('log').textContent()).toContain('left_click');
    // Downloads are links to their artifacts, which the artifact route serves (with the key's cookie).
    const link = page.getByTestId('download');
    expect(await link.textContent()).toBe('orders 2024.csv');
    const href = await link.getAttribute('href');
    expect(href).toBe(`/artifacts/executions/${executionId}/downloads/orders%202024.csv`);
    expect(await page.evaluate(async (url) => (await fetch(url)).text(), href!)).toBe('order,total\nA-1,42.00\n');

    // Plays to its end: the artifact route streams with ranges and the right content type.
    const played = await video.evaluate(
      (el: HTMLVideoElement) =>
        new Promise<{ ended: boolean; duration: number; cues: number }>((resolve, reject) => {
          el.muted = true;
          el.addEventListener('ended', () => resolve({ ended: el.ended, duration: el.duration, cues: el.textTracks[0]?.cues?.length ?? 0 }));
          el.addEventListener('error', () => reject(new Error(`video error ${el.error?.code}: ${el.error?.message}`)));
          el.play().catch(reject);
        }),
    );
    expect(played.ended).toBe(true);
    expect(played.duration).toBeGreaterThan(0.5);
    expect(played.cues).toBe(1);

    await page.goto(`${h.server.url}/#/executions`);
    const row = page.locator(`[data-testid=execution-row][data-id="${executionId}"]`);
    await expect.poll(() => row.getByTestId('status').textContent()).toBe('completed');
    expect(await row.textContent()).toContain('Order total');
  });

  it('edits a workflow into a new version, lists the versions, and deletes it', async () => {
    const created = (await h.call('POST', '/api/workflows', { name: 'Editable', prompt: 'first prompt', allowedDomains: ['a.test'] })).body;
    await page.goto(`${h.server.url}/#/workflows/${created.workflow_uuid as string}`);
    await expect.poll(() => page.getByTestId('version-row').count()).toBe(1);

    const form = page.getByTestId('workflow-form');
    await form.locator('[name=prompt]').fill('second prompt');
    await form.locator('[name=maxSteps]').fill('12');
    await page.getByTestId('save-workflow').click();
    await expect.poll(() => page.getByTestId('version-row').count()).toBe(2);
    const versions = (await h.call('GET', `/api/workflows/${created.workflow_uuid as string}/versions`)).body;
    expect(versions.items.map((v: { specification: unknown }) => v.specification)).toEqual([
      { prompt: 'first prompt', allowedDomains: ['a.test'] },
      { prompt: 'second prompt', allowedDomains: ['a.test'], maxSteps: 12 },
    ]);

    await page.getByTestId('delete-workflow').click();
    await page.waitForURL(/#\/workflows$/);
    await expect.poll(async () => (await h.call('GET', `/api/workflows/${created.workflow_uuid as string}`)).status).toBe(404);
    // The list page has replaced the workflow page once its "New workflow" link shows.
    await page.getByTestId('new-workflow').waitFor();
    expect(await page.getByTestId('workflow-row').filter({ hasText: 'Editable' }).count()).toBe(0);
  });
});
