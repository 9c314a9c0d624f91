import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { hostRules, tempDir } from '../support/env.js';
import { browser as member, finish, startScriptedModelServer, type RecordedRequest, type ScriptedTurn } from '../support/scripted-model-server.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';

/**
 * Stuck loops (docs/action-spaces.md#stuck-loops), whole: the worker on real Chromium, the real
 * SDK against the scripted model server, a page with a dead button (its click changes nothing),
 * a counter and a carousel (each click changes what the page shows). The same click or scroll on
 * the unchanged page is answered as an error at the third try and ends the run with `agent_stuck`
 * at the fifth; the same clicks on the changing widgets go on to the model's finish, and so do
 * identical actions whose only change is one the model is shown but the top page's text does not
 * hold: the focus moving, a frame's text, a canvas's pixels.
 */

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sites/stuck');
const logger = createSilentLogger();
let site: StaticServer;
let dir: string;
let config: Config;
let sandbox: BrowserSandbox;

beforeAll(async () => {
  [site, dir] = await Promise.all([startStaticServer({ root: ROOT }), tempDir('stuck')]);
  config = loadConfig({ BROWSER_HOST_RULES: hostRules('stuck.test'), WORK_DIR: dir, ANTHROPIC_API_KEY: 'k', ANTHROPIC_MAX_RETRIES: '0' });
  sandbox = createBrowser(config, logger);
});

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The centres of the fixture's buttons, in the viewport (1280×800: the screenshots are not scaled). */
const SAVE = { type: 'coordinate', x: 140, y: 120 };
const ADD = { type: 'coordinate', x: 140, y: 220 };
const NEXT = { type: 'coordinate', x: 140, y: 360 };
/** The "Next page" button inside frame.html's frame, and the middle of canvas.html's canvas. */
const FRAME_NEXT = { type: 'coordinate', x: 160, y: 160 };
const CANVAS = { type: 'coordinate', x: 190, y: 155 };

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  lines: Array<Record<string, unknown>>;
}

async function run(script: ScriptedTurn[], page = '/'): Promise<Run> {
  // Turns past the script would be the test's mistake: the run must have ended before them.
  const server = await startScriptedModelServer((_request, index) => script[index] ?? finish('failed', undefined, 'the script ran out'));
  try {
    const deps = createRunnerDeps({ config: { ...config, ANTHROPIC_BASE_URL: server.url, VIDEO_ENABLED: false }, logger, browser: sandbox, store: createLocalStore({ dir, prefix: '' }) });
    const spec = { prompt: 'Save the order settings', allowedDomains: ['stuck.test'], startUrl: `http://stuck.test:${site.port}${page}` };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: null, specification: spec }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const lines = readFileSync(fileURLToPath(summary.urls.logsUrl!), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    return { summary, requests: server.requests, lines };
  } finally {
    await server.stop();
  }
}

interface ResultBlock {
  type: string;
  tool_use_id: string;
  is_error?: boolean;
  content?: Array<{ type: string; text?: string }>;
}
/** The tool results a request answers the previous turn with. */
function resultsIn(request: RecordedRequest): ResultBlock[] {
  const messages = (request.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  const last = messages.at(-1)!;
  return Array.isArray(last.content) ? (last.content as ResultBlock[]).filter((b) => b.type === 'tool_result') : [];
}
const textOf = (block: ResultBlock) => (block.content ?? []).map((b) => b.text ?? '').join('\n');
const repeated = (r: Run) => r.lines.filter((l) => l.type === 'repeated_action').map((l) => [l.repeats, l.outcome]);

/** Asserts the shape of a stuck run: five identical actions, the third and fourth answered as errors, the fifth the end. */
function expectStuckAfterFive(r: Run, label: RegExp) {
  expect(r.summary.document.status).toBe('failed');
  expect(r.summary.document.error).toMatchObject({ code: 'agent_stuck', message: expect.stringMatching(label) });
  expect(r.summary.document.error!.message).toContain('5 times in a row');
  // Five model turns, each an action: no sixth request was sent.
  expect(r.requests).toHaveLength(5);
  expect(r.summary.document.counters).toMatchObject({ nSteps: 5, nAgentActions: 5 });
  const answers = r.requests.slice(1).map((request) => resultsIn(request)[0]!);
  expect(answers.map((a) => a.is_error === true)).toEqual([false, false, true, true]);
  expect(textOf(answers[2]!)).toContain('The page did not change: this is the third time in a row');
  expect(textOf(answers[3]!)).toContain('fourth time in a row');
  expect(repeated(r)).toEqual([
    [3, 'warned'],
    [4, 'warned'],
    [5, 'stopped'],
  ]);
  expect(r.lines.at(-1)).toMatchObject({ type: 'execution_failed', code: 'agent_stuck' });
}

describe('stuck loops on real Chromium', () => {
  it('a dead button clicked again and again: errors at the third and fourth click, agent_stuck at exactly the fifth', async () => {
    const click = member('left_click', { target: SAVE });
    const r = await run(Array.from({ length: 8 }, () => click));
    // The clicks landed on the button: the message names the action and what was under the point.
    expectStuckAfterFive(r, /left click \(140, 120\) \(button "Save settings"\)/);
    expect(r.lines.filter((l) => l.type === 'action')).toHaveLength(5);
  });

  it('a scroll on a page that cannot scroll: agent_stuck at exactly the fifth', async () => {
    const scroll = member('scroll', { target: { type: 'coordinate', x: 640, y: 400 }, scroll_direction: 'down', scroll_amount: 3 });
    const r = await run(Array.from({ length: 8 }, () => scroll));
    expectStuckAfterFive(r, /scroll down 3/);
  });

  it('scrolling down a long page: the scrolls that move it are not counted, the fifth at its end stops the run', async () => {
    const scroll = member('scroll', { target: { type: 'coordinate', x: 640, y: 400 }, scroll_direction: 'down', scroll_amount: 10 });
    const r = await run(Array.from({ length: 20 }, () => scroll), '/long.html');
    expect(r.summary.document.error?.code).toBe('agent_stuck');
    // More than five scrolls: the first ones moved the page (a new scroll position each time).
    const moving = r.requests.length - 5;
    expect(moving).toBeGreaterThanOrEqual(1);
    expect(r.summary.document.counters.nAgentActions).toBe(r.requests.length);
    const answers = r.requests.slice(1).map((request) => resultsIn(request)[0]!.is_error === true);
    // Errors only at the third and fourth scroll after the end was reached.
    expect(answers).toEqual([...Array.from({ length: moving + 2 }, () => false), true, true]);
    expect(repeated(r)).toEqual([
      [3, 'warned'],
      [4, 'warned'],
      [5, 'stopped'],
    ]);
  });

  it('a counter and a carousel change under each identical click: never stopped, the run finishes', async () => {
    const add = member('left_click', { target: ADD });
    const next = member('left_click', { target: NEXT });
    const r = await run([...Array.from({ length: 6 }, () => add), ...Array.from({ length: 6 }, () => next), member('get_page_text'), finish('completed', { count: 6 })]);
    expect(r.summary.document).toMatchObject({ status: 'completed', output: { count: 6 }, counters: { nAgentActions: 12 } });
    expect(repeated(r)).toEqual([]);
    // No answer was an error, and the page really moved: six added, the carousel past its last slide and round to the third.
    for (const request of r.requests.slice(1)) expect(resultsIn(request).every((b) => b.is_error !== true)).toBe(true);
    const pageText = textOf(resultsIn(r.requests.at(-1)!)[0]!);
    expect(pageText).toMatch(/Add one\s+6\b/);
    expect(pageText).toContain('Slide 3 of 4');
  });

  it('the same click alternating with the same click 1 px off: one target, agent_stuck at exactly the fifth', async () => {
    const click = member('left_click', { target: SAVE });
    const off = member('left_click', { target: { ...SAVE, x: SAVE.x + 1 } });
    const r = await run(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? click : off)));
    expectStuckAfterFive(r, /left click \(140, 120\) \(button "Save settings"\)/);
  });

  /** Six identical actions, each changing only what `page` changes, then a finish: the run completes. */
  async function expectNeverStopped(page: string, action: ScriptedTurn, read: RegExp) {
    const r = await run([...Array.from({ length: 6 }, () => action), member('read_page', { filter: 'all' }), finish('completed', { done: true })], page);
    expect(r.summary.document).toMatchObject({ status: 'completed', output: { done: true }, counters: { nAgentActions: 6 } });
    expect(repeated(r)).toEqual([]);
    for (const request of r.requests.slice(1)) expect(resultsIn(request).every((b) => b.is_error !== true)).toBe(true);
    // The actions did what they were for: the last read shows where they led.
    expect(textOf(resultsIn(r.requests.at(-1)!)[0]!)).toMatch(read);
  }

  it('Tab pressed through a form of seven fields: the focus moves each time, never stopped', async () => {
    await expectNeverStopped('/form.html', member('key', { text: 'Tab' }), /textbox "Country"[^\n]*focused|focused[^\n]*textbox "Country"/);
  });

  it('"Next page" clicked inside a frame of the same origin: the frame\'s text changes each time, never stopped', async () => {
    await expectNeverStopped('/frame.html', member('left_click', { target: FRAME_NEXT }), /Page 7 of 9/);
  });

  it('a counter drawn on a canvas clicked again and again: its pixels change each time, never stopped', async () => {
    await expectNeverStopped('/canvas.html', member('left_click', { target: CANVAS }), /Tally/);
  });
});
