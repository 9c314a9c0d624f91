import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execution } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { caseOf, turnOf } from '../faults/harness.js';
import { spawnDaemon, stopAllDaemons, type DaemonProcess } from '../support/daemon-process.js';
import { hostRules, tempDir } from '../support/env.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';
import { finish, startScriptedModelServer, toolUse, type ScriptedModelServer, type ScriptedTurn } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * A person in the loop through the dashboard, end to end: the local API on real Redis, a worker
 * daemon reporting to it, the fixture shop, and the dashboard in real Chromium. A person answers
 * an approval with its Approve or Deny button (sent as a decision, recorded under the session's
 * identity), and takes over a sign-in by clicking and typing into the live
 * view (the dashboard's own path: local API → answers stream → the worker → the page).
 */

const PASSWORD = 'Tr0ub4dor-and-3';
const VIEWPORT = { width: 1280, height: 800 };

let h: Harness;
let shop: ShopServer;
let model: ScriptedModelServer;
let worker: DaemonProcess;
let browser: Browser;
let page: Page;
let dir: string;

const cases: Record<string, (turn: number) => ScriptedTurn> = {
  approve: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Send the payment of 120 EUR?', kind: 'approval', choices: ['approve', 'deny'] }) : finish('completed', { paid: true })),
  deny: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Delete customer C-7?', kind: 'approval', choices: ['approve', 'deny'] }) : finish('failed', undefined, 'the person did not approve')),
  takeover: (turn) => (turn === 0 ? toolUse('ask_human', { question: 'Please sign in to the shop for me.', kind: 'takeover' }) : finish('completed', { signedIn: true })),
};

beforeAll(async () => {
  dir = await tempDir('human-dashboard');
  h = await startHarness({ artifactsDir: path.join(dir, 'artifacts'), network: true });
  shop = await startShopServer();
  model = await startScriptedModelServer((request) => {
    const script = cases[caseOf(request) ?? ''];
    return script ? script(turnOf(request)) : { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'no script' } }, headers: { 'x-should-retry': 'false' } };
  });
  worker = spawnDaemon('human-dashboard', {
    REDIS_URL: h.redis.url,
    EXECUTION_QUEUE: h.queueName,
    QUEUE_PREFIX: 'bull',
    WORKER_CONCURRENCY: '2',
    API_BASE_URL: h.server.url,
    API_KEY,
    ANTHROPIC_API_KEY: 'sk-ant-human-dashboard',
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_MAX_RETRIES: '1',
    S3_BUCKET: '',
    ARTIFACTS_DIR: path.join(dir, 'artifacts'),
    BROWSER_HOST_RULES: hostRules('shop.test'),
    WORK_DIR: path.join(dir, 'work'),
    HEALTH_PORT: '0',
    VIDEO_FPS: '5',
    VIEWPORT_WIDTH: String(VIEWPORT.width),
    VIEWPORT_HEIGHT: String(VIEWPORT.height),
  });
  await worker.waitForLog('daemon running');
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(h.server.url);
  await page.getByTestId('api-key').fill(API_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('new-workflow').waitFor();
});

afterAll(async () => {
  await browser?.close();
  await stopAllDaemons();
  await Promise.allSettled([h?.close(), shop?.close(), model?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function execute(caseName: string, extra: Record<string, unknown>): Promise<string> {
  const created = await h.api.as(workflow)('POST', '/api/workflows', {
    name: `human ${caseName}`,
    prompt: `[case:${caseName}] Do the task in the shop.`,
    allowedDomains: ['shop.test'],
    startUrl: `${shop.origin}/`,
    ...extra,
  });
  expect(created.status).toBe(201);
  const run = await h.api.as(execution)('POST', `/api/workflows/${created.body.workflow_uuid}/execute`, {});
  expect(run.status).toBe(201);
  return run.body.execution_uuid;
}

/** Who a key signs in as: its tag, as the local service records it (a digest, never the key). */
const identityOf = (key: string) => (key === API_KEY ? 'bootstrap-2' : 'bootstrap-1');

const statusOf = async (id: string) => (await h.api.as(execution)('GET', `/api/executions/${id}`)).body;

/** Clicks the live view where the page's point (viewport px) is shown. */
async function clickPage(x: number, y: number): Promise<void> {
  const box = (await page.getByTestId('live-frame').boundingBox())!;
  await page.mouse.click(box.x + ((x + 0.5) / VIEWPORT.width) * box.width, box.y + ((y + 0.5) / VIEWPORT.height) * box.height);
}

describe('a person in the loop, on the dashboard', () => {
  it('lists a waiting execution as waiting for you and takes an approval from its button', async () => {
    const id = await execute('approve', { approvals: ['sending a payment'], humanTimeoutMs: 120_000 });
    await expect.poll(async () => (await statusOf(id)).status, { timeout: 60_000 }).toBe('waiting');
    expect((await statusOf(id)).waiting).toMatchObject({ kind: 'approval', question: 'Send the payment of 120 EUR?', choices: ['approve', 'deny'] });

    await page.goto(`${h.server.url}/#/executions`);
    await expect.poll(() => page.locator(`[data-testid=execution-row][data-id="${id}"] [data-testid=waiting-for-you]`).count(), { timeout: 20_000 }).toBe(1);

    await page.goto(`${h.server.url}/#/executions/${id}`);
    await expect.poll(() => page.getByTestId('human-question').textContent(), { timeout: 20_000 }).toBe('Send the payment of 120 EUR?');
    // An approval is answered by its two buttons only: no choices of the model's, no free text.
    expect(await page.getByTestId('human-approve').textContent()).toBe('Approve');
    expect(await page.getByTestId('human-choice').count()).toBe(0);
    expect(await page.getByTestId('human-answer').count()).toBe(0);
    const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/api/executions/${id}/answer`));
    await page.getByTestId('human-approve').click();
    expect((await sent).postDataJSON()).toEqual({ decision: 'approve' });
    await expect.poll(async () => (await statusOf(id)).status, { timeout: 60_000 }).toBe('completed');
    const done = await statusOf(id);
    // Answered by whoever signed the dashboard in: the session's key.
    expect(done).toMatchObject({ n_steps: 2, n_agent_actions: 0, answered_by: identityOf(API_KEY) });
    // A second answer once the run goes on is refused.
    expect((await h.api('POST', `/api/executions/${id}/answer`, { answer: 'deny' })).status).toBe(409);
  });

  it('fails the run with approval_denied when the person presses Deny', async () => {
    const id = await execute('deny', { approvals: ['deleting a customer'], humanTimeoutMs: 120_000 });
    await page.goto(`${h.server.url}/#/executions/${id}`);
    await expect.poll(() => page.getByTestId('human-question').textContent(), { timeout: 60_000 }).toBe('Delete customer C-7?');
    const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/api/executions/${id}/answer`));
    await page.getByTestId('human-deny').click();
    expect((await sent).postDataJSON()).toEqual({ decision: 'deny' });
    await expect.poll(async () => (await statusOf(id)).status, { timeout: 60_000 }).toBe('failed');
    expect(await statusOf(id)).toMatchObject({ error: { code: 'approval_denied' } });
    const output = JSON.parse(await readFile(path.join(dir, 'artifacts', 'executions', id, 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output.human).toEqual([expect.objectContaining({ kind: 'approval', answer: 'deny', by: identityOf(API_KEY) })]);
  });

  it('passes a person\'s clicks and typing in the live view to the page, and the agent completes after "done"', async () => {
    // Another execution waits beside it: the person's input must reach only the one they act on.
    const bystander = await execute('takeover', { humanTimeoutMs: 300_000 });
    const id = await execute('takeover', { humanTimeoutMs: 300_000 });
    for (const each of [bystander, id]) await expect.poll(async () => (await statusOf(each)).status, { timeout: 60_000 }).toBe('waiting');
    // Input for an execution that does not wait is refused.
    expect((await h.api('POST', `/api/executions/00000000-0000-0000-0000-000000000000/input`, { kind: 'text', text: 'x' })).status).toBe(404);

    await page.goto(`${h.server.url}/#/executions/${id}`);
    await expect.poll(() => page.getByTestId('human-question').textContent(), { timeout: 20_000 }).toBe('Please sign in to the shop for me.');
    // The picture has its real size once a frame is in: a click then lands where it shows.
    await expect.poll(() => page.getByTestId('live-frame').evaluate((img: HTMLImageElement) => img.naturalWidth), { timeout: 30_000 }).toBeGreaterThan(0);

    await clickPage(250, 120); // the user field
    await page.keyboard.type('alice');
    await clickPage(250, 180); // the password field
    await page.keyboard.type(PASSWORD);
    await clickPage(175, 240); // Sign in
    await page.getByTestId('human-choice').filter({ hasText: 'done' }).click();

    await expect.poll(async () => (await statusOf(id)).status, { timeout: 60_000 }).toBe('completed');
    expect(shop.forms.filter((f) => f.path === '/login')).toEqual([{ path: '/login', fields: { user: 'alice', password: PASSWORD } }]);
    expect((await statusOf(bystander)).status).toBe('waiting');
    expect((await h.api('POST', `/api/executions/${bystander}/answer`, { answer: 'done' })).status).toBe(202);
    await expect.poll(async () => (await statusOf(bystander)).status, { timeout: 60_000 }).toBe('completed');
    expect(await readFile(path.join(dir, 'artifacts', 'executions', bystander, 'logs.jsonl'), 'utf8')).not.toContain('human_input');

    const logs = await readFile(path.join(dir, 'artifacts', 'executions', id, 'logs.jsonl'), 'utf8');
    const inputs = logs
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.type === 'human_input');
    expect(inputs.filter((l) => l.kind === 'click')).toHaveLength(3);
    expect(inputs.filter((l) => l.kind === 'text').length).toBe('alice'.length + PASSWORD.length);
    expect(inputs.every((l) => l.ok === true)).toBe(true);
    // What the person typed is nowhere in the log, not even a piece of it.
    expect(logs).not.toContain(PASSWORD.slice(0, 8));
    expect(logs).not.toContain('alice"');
    // A run that asked a person does not become the version's run cache: the next one asks again.
    expect(logs).not.toContain('run_cache_saved');
    // The video marks each of the person's clicks, like the agent's, on its steps track.
    const vtt = await readFile(path.join(dir, 'artifacts', 'executions', id, 'steps.vtt'), 'utf8');
    expect(vtt.match(/person: click/g)).toHaveLength(3);
    const output = JSON.parse(await readFile(path.join(dir, 'artifacts', 'executions', id, 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output).toMatchObject({ status: 'completed', human: [{ kind: 'takeover', answer: 'done' }], counters: { nAgentActions: 0 } });
    // The finished execution's steps show the question, the person's input and the answer.
    await expect.poll(async () => (await page.getByTestId('step-human').allTextContents()).join('\n'), { timeout: 30_000 }).toContain('asked a person (takeover): Please sign in to the shop for me.');
    const shown = (await page.getByTestId('step-human').allTextContents()).join('\n');
    expect(shown).toContain('person: click');
    expect(shown).toContain(`answered by ${identityOf(API_KEY)} after`);
    expect(shown).not.toContain(PASSWORD.slice(0, 8));
    // Each agent was told the person had finished, with the page as they left it.
    expect(model.requests.filter((r) => r.rawBody.includes('The person has finished acting in the browser'))).toHaveLength(2);
  });
});
