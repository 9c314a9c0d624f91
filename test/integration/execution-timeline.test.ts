import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_COMPUTER_CALLS, DEMO_INPUT, DEMO_WORKFLOW } from '../../demo/workflow.js';
import { loginLink } from '../../src/contract/access.js';
import { execution, executionList } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { liveChannelNames } from '../../src/domain/live-protocol.js';
import type { LocalServer } from '../../src/local-service/server.js';
import { deferred } from '../support/deferred.js';
import { waitForJob } from '../support/queue-events.js';
import type { TestRedis } from '../support/redis.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';
import { text, toolUseBlock, turn, type ScriptedTurn } from '../support/scripted-model-server.js';
import type { ShopServer } from '../support/shop-server.js';
import { startDaemonStack, type DaemonStack } from '../support/stack.js';

/**
 * The execution page in real Chromium, on the real worker (daemon), the local service and one
 * real Redis, with the scripted model server: a finished run's timeline (every step with its
 * screenshot and actions, tied to the video), a failed run opening at its failing step, and a
 * running execution watched live (frames, steps appearing) — and refused to a wrong key.
 *
 * With DASHBOARD_SHOTS_DIR set, screenshots of the pages are kept there (PNG) for a look by eye.
 */

const KEY = 'timeline-test-key';
const SHOTS = process.env.DASHBOARD_SHOTS_DIR;

let stack: DaemonStack;
let redis: TestRedis;
let shop: ShopServer;
let dir: string;
let api: LocalServer;
let queue: Queue;
let queueName: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** The model's next answers, taken in order by the one execution running at a time. */
const turns: ScriptedTurn[] = [];

beforeAll(async () => {
  stack = await startDaemonStack({
    name: 'timeline',
    key: KEY,
    model: () => turns.shift() ?? { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'no turn left' } } },
    env: { WORKER_CONCURRENCY: '1', VIDEO_FPS: '5' },
  });
  ({ redis, shop, dir, api, queue, queueName } = stack);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  if (SHOTS) await mkdir(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  // The model server refuses requests that break the API's rules (its stop() says which).
  await stack?.close();
});

/** Creates the demo workflow and executes it; answers the execution id. */
async function execute(): Promise<string> {
  // Computer use with the earlier tool: one action per step, each step with its own screenshot.
  const created = await stack.call.as(workflow)('POST', '/api/workflows', { ...DEMO_WORKFLOW(`${shop.origin}/`), model: 'claude-opus-4-7' });
  const executed = await stack.call.as(execution)('POST', `/api/workflows/${String(created.body.workflow_uuid)}/execute`, { inputPayload: DEMO_INPUT });
  return String(executed.body.execution_uuid);
}

/** Opens the execution's page through a login link: no key typed. */
async function openSignedIn(target: Page, executionId: string): Promise<void> {
  const link = await stack.call.as(loginLink)('POST', '/api/login-links', { route: `#/executions/${executionId}` });
  await target.goto(String(link.body.url));
  await target.waitForURL(`${api.url}/#/executions/${executionId}`);
}

const demoTurns = (): ScriptedTurn[] =>
  DEMO_COMPUTER_CALLS.map((call, i) => turn(text(`Step ${i + 1}: ${narrate(call.input)}`), toolUseBlock(call.name, call.input)));

function narrate(input: Record<string, unknown>): string {
  if (input.action === 'type') return `typing ${String(input.text)} into the focused field.`;
  if (input.action === 'key') return 'submitting the form.';
  if (typeof input.action === 'string') return `I click the field at ${JSON.stringify(input.coordinate)}.`;
  return 'the order is placed; reporting its id.';
}

/** Keeps a screenshot of the page once its video (if any) shows a frame. */
async function shoot(name: string): Promise<void> {
  const video = page.getByTestId('video');
  if ((await video.count()) > 0) {
    await video.evaluate(async (v: HTMLVideoElement) => {
      if (v.seeking) await new Promise((resolve) => v.addEventListener('seeked', resolve, { once: true }));
      if (v.readyState < 2) await new Promise((resolve) => v.addEventListener('loadeddata', resolve, { once: true }));
    });
  }
  await page.screenshot({ path: path.join(SHOTS!, name), fullPage: true });
}

const steps = () => page.getByTestId('step');
const step = (n: number) => page.locator(`[data-testid=step][data-step="${n}"]`);

describe('execution page', () => {
  it("lists every step of a finished run with the model's screen, text and actions, tied to the video", async () => {
    // Nobody watches this run: nothing at all may be published for it.
    const spy = new Redis(redis.url);
    const published: string[] = [];
    spy.on('pmessage', (_pattern: string, channel: string) => published.push(channel));
    await spy.psubscribe(`bull:${queueName}:live:*`);
    try {
      turns.push(...demoTurns());
      const id = await execute();
      await waitForJob(queue, id, redis.url);
      expect(published).toEqual([]);
    } finally {
      spy.disconnect();
    }
    const id = (await stack.call.as(executionList)('GET', '/api/executions?limit=1')).body.items;
    expect(id[0]?.status).toBe('completed');
    const executionId = id[0]!.execution_uuid;
    const files = await readdir(path.join(dir, 'artifacts', 'executions', executionId, 'steps'));
    expect(files.sort()).toEqual(['001.jpg', '002.jpg', '003.jpg', '004.jpg', '005.jpg', '006.jpg', '007.jpg', '008.jpg', '009.jpg']);

    await openSignedIn(page, executionId);
    await expect.poll(() => steps().count(), { timeout: 15_000 }).toBe(9);
    const labels = ['click (250, 120)', 'type "ann"', 'click (250, 180)', 'type "{{password}}"', 'click (175, 240)', 'triple click (250, 120)', 'type "PO-778"', 'key Return', null];
    for (let n = 1; n <= 9; n++) {
      const item = step(n);
      expect(await item.getByTestId('step-text').textContent()).toMatch(new RegExp(`^Step ${n}: `));
      const label = labels[n - 1];
      if (label) expect(await item.getByTestId('step-action').first().textContent()).toContain(label);
      // The thumbnail is the very screenshot the model got at this step, served from the artifacts.
      const thumb = item.getByTestId('step-thumb');
      expect(await thumb.getAttribute('src')).toBe(`/artifacts/executions/${executionId}/steps/${String(n).padStart(3, '0')}.jpg`);
      await thumb.scrollIntoViewIfNeeded();
      await expect.poll(() => thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1280);
    }
    // Secrets stay placeholders on the page.
    expect(await page.locator('body').textContent()).not.toContain(DEMO_INPUT.password);

    // A click on a step seeks the video to that moment and marks the step.
    const video = page.getByTestId('video');
    await video.evaluate((v: HTMLVideoElement) => (v.readyState >= 1 ? undefined : new Promise((resolve) => v.addEventListener('loadedmetadata', resolve, { once: true }))));
    const t5 = Number(await step(5).getAttribute('data-t'));
    expect(t5).toBeGreaterThan(0);
    await step(5).click();
    expect(await video.evaluate((v: HTMLVideoElement) => v.currentTime)).toBeCloseTo(t5 / 1000, 3);
    await expect.poll(() => step(5).getAttribute('class')).toContain('current');

    // The video's time marks the step on screen at that moment.
    const t7 = Number(await step(7).getAttribute('data-t'));
    await video.evaluate((v: HTMLVideoElement, at: number) => new Promise((resolve) => {
      v.addEventListener('seeked', resolve, { once: true });
      v.currentTime = at;
    }), (t7 + 30) / 1000);
    await expect.poll(() => step(7).getAttribute('class')).toContain('current');
    expect(await step(5).getAttribute('class')).not.toContain('current');

    // The raw log is one click away.
    const rawLog = page.getByTestId('log');
    expect(await rawLog.isVisible()).toBe(false);
    await page.getByTestId('raw-log').locator('summary').click();
    expect(await rawLog.isVisible()).toBe(true);
    expect(await rawLog.textContent()).toContain('model_turn');
    if (SHOTS) {
      await step(5).click();
      await shoot('completed-timeline.png');
    }
  });

  it('opens a failed run at its failing step, with the error and the blocked request flagged', async () => {
    turns.push(
      turn(text('Opening the sign-in form.'), toolUseBlock('computer', { action: 'left_click', coordinate: [250, 120] })),
      turn(text('The price list is on another site.'), toolUseBlock('navigate', { url: 'https://prices.evil.test/' })),
      turn(text('I cannot reach the price list.'), toolUseBlock('finish', { status: 'failed', reason: 'the price list is outside the allowed sites' })),
    );
    const id = await execute();
    await waitForJob(queue, id, redis.url);
    await openSignedIn(page, id);
    await expect.poll(() => page.getByTestId('execution-error').textContent(), { timeout: 15_000 }).toBe('agent_failed: the price list is outside the allowed sites');
    expect(await steps().count()).toBe(3);
    const failing = step(3);
    expect(await failing.getAttribute('class')).toContain('failed');
    expect(await failing.getAttribute('aria-current')).toBe('step');
    expect(await failing.getByTestId('step-error').textContent()).toContain('the price list is outside the allowed sites');
    // The refused navigation is flagged on its step.
    expect(await step(2).getByTestId('step-blocked').textContent()).toContain('prices.evil.test');
    expect(await step(2).getByTestId('step-action').textContent()).toContain('navigate');
    const video = page.getByTestId('video');
    const t3 = Number(await failing.getAttribute('data-t'));
    // The last step may begin after the video's last frame: it is shown on that frame.
    const duration = await video.evaluate((v: HTMLVideoElement) => (v.readyState >= 1 ? v.duration : new Promise<number>((resolve) => v.addEventListener('loadedmetadata', () => resolve(v.duration), { once: true }))));
    await expect.poll(() => video.evaluate((v: HTMLVideoElement) => v.currentTime)).toBeCloseTo(Math.min(t3 / 1000, duration - 0.05), 3);
    await video.evaluate((v: HTMLVideoElement) => (v.seeking ? new Promise((resolve) => v.addEventListener('seeked', resolve, { once: true })) : undefined));
    // Once the video is there, the failing step is still the one marked.
    expect(await failing.getAttribute('aria-current')).toBe('step');
    expect(await page.locator('[data-testid=step][aria-current]').count()).toBe(1);
    if (SHOTS) await shoot('failed-execution.png');
  });

  it('shows a running execution live, steps appearing as they happen; a wrong key gets no frames', async () => {
    const gates = DEMO_COMPUTER_CALLS.map(() => deferred());
    turns.push(...demoTurns().map((t, i) => ({ ...t, until: gates[i]!.promise })));
    const spy = new Redis(redis.url);
    let framesPublished = 0;
    spy.on('pmessageBuffer', (_pattern: Buffer, channel: Buffer) => {
      if (channel.toString().endsWith(':frames')) framesPublished += 1;
    });
    await spy.psubscribe(`bull:${queueName}:live:*`);
    try {
      const id = await execute();
      await openSignedIn(page, id);
      await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
      const frame = page.getByTestId('live-frame');
      const frames = async () => Number(await frame.getAttribute('data-frames'));

      // The model is asked at step 1: the screen shows live and the step appears.
      await expect.poll(frames, { timeout: 30_000 }).toBeGreaterThan(0);
      expect(await frame.getAttribute('src')).toMatch(/^data:image\/jpeg;base64,\/9j\//);
      await expect.poll(() => steps().count(), { timeout: 15_000 }).toBe(1);
      const before = await frames();

      gates[0]!.resolve();
      await expect.poll(() => step(1).getByTestId('step-action').textContent(), { timeout: 15_000 }).toContain('click (250, 120)');
      gates[1]!.resolve();
      await expect.poll(() => step(2).getByTestId('step-action').textContent(), { timeout: 15_000 }).toContain('type "ann"');
      await expect.poll(() => step(3).count(), { timeout: 15_000 }).toBe(1);
      // Typing repainted the page: new frames came without a reload.
      await expect.poll(frames, { timeout: 15_000 }).toBeGreaterThan(before);
      expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, 'live-execution.png'), fullPage: true });

      // A wrong key gets no frames: not over HTTP, not in a browser without a session.
      const names = liveChannelNames('bull', queueName);
      const wrong = await fetch(`${api.url}/live/executions/${id}`, { headers: { 'x-service-key': 'wrong-key' } });
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).not.toContain('event: frame');
      const stranger = await browser.newContext();
      try {
        const other = await stranger.newPage();
        await other.goto(`${api.url}/#/executions/${id}`);
        await other.waitForURL(`${api.url}/#/settings`);
        await other.getByTestId('api-key').fill('wrong-key');
        await other.getByRole('button', { name: 'Sign in' }).click();
        await other.getByTestId('error').waitFor();
        if (SHOTS) await other.screenshot({ path: path.join(SHOTS, 'sign-in-refused.png') });
        const status = await other.evaluate(async (url) => (await fetch(url)).status, `/live/executions/${id}`);
        expect(status).toBe(401);
        expect(await other.getByTestId('live-frame').count()).toBe(0);
      } finally {
        await stranger.close();
      }
      // Only the signed-in page is subscribed to the frames.
      const admin = new Redis(redis.url);
      try {
        expect(await admin.pubsub('NUMSUB', names.frames(id))).toEqual([names.frames(id), 1]);
      } finally {
        admin.disconnect();
      }

      for (const gate of gates) gate.resolve();
      // The run ends: the same page turns into the finished view.
      await page.getByTestId('video').waitFor({ timeout: 30_000 });
      await expect.poll(() => page.getByTestId('step-thumb').count(), { timeout: 15_000 }).toBe(9);
      expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
      expect(framesPublished).toBeGreaterThan(0);
    } finally {
      spy.disconnect();
    }
  });
});
