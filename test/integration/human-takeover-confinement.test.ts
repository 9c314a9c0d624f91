import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastObservation } from '../../demo/workflow.js';
import { execution } from '../../src/contract/executions.js';
import { workflow } from '../../src/contract/workflows.js';
import type { Daemon } from '../../src/daemon.js';
import type { Call } from '../support/call.js';
import { freePort, turnOf } from '../faults/harness.js';
import { startRecordingServer, type RecordingServer } from '../support/evil-server.js';
import { finish, toolUse, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startDaemonStack, type DaemonStack } from '../support/stack.js';

/**
 * A person's input during a takeover stays inside the allow-list, and the daemon's /metrics say
 * how many runs wait for a person (docs/human-in-the-loop.md, docs/operations.md#health-and-metrics). The
 * local API and a worker daemon on real Redis, the page in real Chromium, the person's click sent
 * the dashboard's way (POST /api/executions/{id}/input → the answers stream → the worker).
 */

const VIEWPORT = { width: 1280, height: 800 };
/** The link to the other host covers the page's top-left quarter: a click at (0.1, 0.1) lands on it. */
const PAGE =
  '<!doctype html><title>Orders</title><body style="margin:0"><a id="out" href="http://evil.test/leak?from=takeover" ' +
  'style="position:absolute;left:0;top:0;width:640px;height:400px;display:block;background:#fde">Open the partner portal</a><p style="position:absolute;top:500px">Orders of the day</p>';

// The contract harness's key, as before: with 'takeover-key' the daemon's /metrics showed the kind
// label as kind="[REDACTED]" (the key's masking reaches the word `takeover`).
const KEY = 'test-key-7f3a9c';
let stack: DaemonStack<ScriptedModelServer>;
let allowed: RecordingServer;
let evil: RecordingServer;
let model: ScriptedModelServer;
let daemon: Daemon;
let dir: string;
let api: Call;

beforeAll(async () => {
  [allowed, evil] = await Promise.all([
    startRecordingServer('allowed.test', (_req, res) => void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)),
    startRecordingServer('evil.test', (_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<p>outside</p>')),
  ]);
  stack = await startDaemonStack({
    name: 'human-takeover',
    key: KEY,
    model: (request) => (turnOf(request) === 0 ? toolUse('ask_human', { question: 'Please look at the orders for me.', kind: 'takeover' }) : finish('completed', { looked: 'yes' })),
    env: {
      WORKER_CONCURRENCY: '1',
      ANTHROPIC_API_KEY: 'sk-ant-takeover',
      ANTHROPIC_MAX_RETRIES: '0',
      S3_BUCKET: '',
      BROWSER_HOST_RULES: `MAP allowed.test 127.0.0.1:${allowed.port},MAP evil.test 127.0.0.1:${evil.port}`,
      HEALTH_PORT: String(await freePort()),
      VIDEO_ENABLED: 'false',
      VIEWPORT_WIDTH: String(VIEWPORT.width),
      VIEWPORT_HEIGHT: String(VIEWPORT.height),
    },
  });
  ({ model, worker: daemon, dir, call: api } = stack);
});

afterAll(async () => {
  await Promise.allSettled([stack?.close(), allowed?.close(), evil?.close()]);
});

const statusOf = async (id: string) => (await api.as(execution)('GET', `/api/executions/${id}`)).body;

async function metrics(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${daemon.healthPort}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** A metric's value in the exposition text (0 when the series is not there yet). */
function valueOf(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const ANSWERED = 'execution_worker_human_answers_total{kind="takeover",outcome="answered"}';

describe('a takeover', () => {
  it("refuses a person's click on a link to a host outside the allow-list, and /metrics count the run while it waits", async () => {
    const before = await metrics();
    expect(valueOf(before, 'execution_worker_waiting_for_human')).toBe(0);
    const created = await api.as(workflow)('POST', '/api/workflows', { name: 'takeover', prompt: 'Look at the orders.', allowedDomains: ['allowed.test'], startUrl: 'http://allowed.test/orders', humanTimeoutMs: 300_000 });
    expect(created.status).toBe(201);
    const run = await api.as(execution)('POST', `/api/workflows/${created.body.workflow_uuid}/execute`, {});
    const id = run.body.execution_uuid;
    await expect.poll(async () => (await statusOf(id)).status, { timeout: 90_000 }).toBe('waiting');
    // The API hears of the wait once the gauge counts it (the `waiting` event comes first).
    expect(valueOf(await metrics(), 'execution_worker_waiting_for_human')).toBe(1);

    // The person clicks the link, the way the dashboard's live view sends it, then says done.
    expect((await api('POST', `/api/executions/${id}/input`, { kind: 'click', x: 0.1, y: 0.1, button: 'left' })).status).toBe(202);
    expect((await api('POST', `/api/executions/${id}/answer`, { answer: 'done', by: 'alice' })).status).toBe(202);
    await expect.poll(async () => (await statusOf(id)).status, { timeout: 90_000 }).toBe('completed');

    const logs = (await readFile(path.join(dir, 'artifacts', 'executions', id, 'logs.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const click = logs.find((l) => l.type === 'human_input');
    expect(click).toMatchObject({ kind: 'click', ok: true, navigationRefused: true });
    // The navigation the click started was refused by the allow-list, and reported.
    const blocked = logs.filter((l) => l.type === 'blocked');
    expect(blocked.map((l) => String(l.url))).toContainEqual(expect.stringContaining('http://evil.test/leak'));
    // It happened while the run waited, from the person's click: the agent took no action.
    const at = logs.findIndex((l) => l.type === 'blocked' && String(l.url).includes('evil.test/leak'));
    expect(at).toBeGreaterThan(logs.findIndex((l) => l.type === 'waiting'));
    expect(at).toBeLessThan(logs.findIndex((l) => l.type === 'resumed'));
    expect(logs.filter((l) => l.type === 'action')).toEqual([]);
    expect(click).toBeDefined();
    expect(evil.hits).toEqual([]);
    // The page stayed where it was: the agent's view after the takeover is still the orders page.
    const after = lastObservation(model.requests[1]!.body);
    expect(after).toContain('The person has finished acting in the browser');
    expect(after).toContain('The active tab is tab_1: Orders (http://allowed.test/orders)');
    expect(after).not.toContain('chrome-error');
    expect(allowed.hits.filter((hit) => hit.url.startsWith('/orders')).length).toBeGreaterThanOrEqual(1);

    const done = await metrics();
    expect(valueOf(done, 'execution_worker_waiting_for_human')).toBe(0);
    expect(valueOf(done, ANSWERED) - valueOf(before, ANSWERED)).toBe(1);
    expect(valueOf(done, 'execution_worker_human_wait_seconds_count')).toBe(1);
    expect(valueOf(done, 'execution_worker_blocked_requests_total{layer="request-guard"}')).toBeGreaterThanOrEqual(1);
  });
});
