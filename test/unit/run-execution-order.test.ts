import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { BrowserSession } from '../../src/browser/types.js';
import type { ControlPlane } from '../../src/control-plane/types.js';
import type { LiveChannel, LiveRelay } from '../../src/live/types.js';
import type { ModelClient } from '../../src/model/types.js';
import type { ActiveRecording, VideoRecorder } from '../../src/recorder/types.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { RunnerDeps } from '../../src/runner/types.js';
import type { ArtifactStore } from '../../src/storage/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { createModelPricing } from '../../src/model/prices.js';
import type { ActionSpace, ActionSpaceChoice } from '../../src/toolset/types.js';
import { tempDir } from '../support/env.js';
import type { ModelResponse } from '../../src/contract/recording.js';

/**
 * The order an execution closes in, whatever ended it (docs/architecture.md#one-scope-closed-in-reverse):
 * the live view detaches and the video stops before the browser closes; the report goes after the
 * uploads, and viewers hear the end after the report; the scratch folder goes last. In-memory
 * parts that write down when each thing happens; the real ones are covered by the integration tests.
 */

const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
const finishTurn: ModelResponse = { id: 'm1', model: 'x', stopReason: 'tool_use', usage, content: [{ type: 'tool_use', id: 't1', name: 'finish', input: { status: 'completed', output: 'ok' } }] };

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function rig(options: { openSession?: 'fails'; sessionClose?: 'fails'; model?: 'throws'; started?: 'conflict' } = {}) {
  const order: string[] = [];
  const workDir = await tempDir('run-order');
  dirs.push(workDir);
  const session = {
    viewport: { width: 800, height: 600 },
    navigate: async () => ({ ok: true }),
    currentUrl: () => 'https://shop.test/',
    close: async () => {
      order.push('session.close');
      if (options.sessionClose === 'fails') throw new Error('the browser would not close');
    },
  } as unknown as BrowserSession;
  const space: ActionSpace = {
    kind: 'browser',
    toolType: 'browser',
    betas: [],
    display: { width: 800, height: 600 },
    guide: '',
    tools: () => [],
    owns: () => false,
    run: async () => {
      throw new Error('no actions in this test');
    },
    opening: async () => [{ type: 'text', text: 'the page' }],
    notExecuted: () => ({ type: 'tool_result', tool_use_id: 'x', content: [] }),
  };
  const model: ModelClient = {
    async createTurn() {
      order.push('model.turn');
      if (options.model === 'throws') throw new Error('an unexpected bug');
      return finishTurn;
    },
  };
  const video: ActiveRecording = {
    mark: () => undefined,
    stop: async () => {
      order.push('video.stop');
      return null;
    },
    stepsVtt: () => 'WEBVTT\n',
    tap: () => () => order.push('live-view.detach'),
  };
  const recorder: VideoRecorder = { start: async () => video };
  let liveClosed = false;
  // Idempotent, as the port promises: the scope closes it again on the paths finalise did not.
  const channel: LiveChannel = { watched: false, onWatchChange: () => undefined, frame: () => undefined, event: () => undefined, close: () => void (liveClosed || order.push('live.close'), (liveClosed = true)) };
  const live: LiveRelay = { open: () => channel, close: async () => undefined };
  const store: ArtifactStore = {
    async put(_id, name) {
      order.push(`upload ${name}`);
      return { key: name, url: `file:///${name}`, bytes: 1 };
    },
  };
  const reported = (what: string) => async () => {
    // The scratch folder is still there when the report goes: nothing was cleaned up early.
    order.push(`${what} (scratch ${(await readdir(workDir)).length > 0 ? 'kept' : 'gone'})`);
  };
  const controlPlane = {
    markStarted: async () => (options.started === 'conflict' ? { ok: false, status: 409, reason: 'already running elsewhere' } : { ok: true }),
    reportCompleted: reported('report completed'),
    reportFailed: reported('report failed'),
  } as unknown as ControlPlane;
  const deps: RunnerDeps = {
    controlPlane,
    browser: {
      openSession: async () => {
        if (options.openSession === 'fails') throw new Error('no browser today');
        return session;
      },
    } as unknown as RunnerDeps['browser'],
    recorder,
    store,
    createModel: () => ({ client: model, record: (request, signal, next) => next(request, signal), recording: () => ({ version: 1 }) as never }),
    pricing: createModelPricing(),
    chooseActionSpace: () => ({ ok: true, choice: { kind: 'browser' } as ActionSpaceChoice }),
    createActionSpace: () => space,
    checkSpecification: () => undefined,
    checkFileUrl: () => ({ ok: true }),
    openInputFile: async () => {
      throw new Error('no input files in this test');
    },
    logger: createSilentLogger(),
    live,
    settings: {
      runCache: false,
      defaultModel: 'claude-sonnet-4-5',
      maxSteps: 5,
      timeoutMs: 60_000,
      humanTimeoutMs: 0,
      viewport: { width: 800, height: 600 },
      workDir,
      stepScreenshots: false,
      secrets: [],
      downloadMaxBytes: 1_000_000,
      inputFileMaxBytes: 1_000_000,
      inputFileTimeoutMs: 1_000,
      inputFileBuckets: [],
      budget: {},
    },
  };
  const job = { executionId: 'exec-order', inputPayload: null, specification: { prompt: 'Look', allowedDomains: ['shop.test'] } };
  return { order, deps, job, workDir };
}

describe('the order an execution closes in', () => {
  it('completed: live view, video, browser, then the uploads, the report, the live channel, and the scratch folder', async () => {
    const t = await rig();
    const summary = await runExecution(t.deps, t.job, new AbortController().signal);
    expect(summary.status).toBe('completed');
    expect(t.order.filter((step) => !step.startsWith('upload'))).toEqual(['model.turn', 'live-view.detach', 'video.stop', 'session.close', 'report completed (scratch kept)', 'live.close']);
    const reportAt = t.order.findIndex((step) => step.startsWith('report'));
    const uploads = t.order.flatMap((step, i) => (step.startsWith('upload') ? [i] : []));
    expect(uploads.length).toBeGreaterThan(0);
    expect(Math.max(...uploads)).toBeLessThan(reportAt);
    expect(Math.min(...uploads)).toBeGreaterThan(t.order.indexOf('session.close'));
    expect(await readdir(t.workDir)).toEqual([]);
  });

  it('a browser that fails to close is logged; the run is still reported and everything else closes', async () => {
    const t = await rig({ sessionClose: 'fails' });
    const summary = await runExecution(t.deps, t.job, new AbortController().signal);
    expect(summary).toMatchObject({ status: 'completed', reported: true });
    expect(t.order.filter((step) => !step.startsWith('upload'))).toEqual(['model.turn', 'live-view.detach', 'video.stop', 'session.close', 'report completed (scratch kept)', 'live.close']);
    expect(await readdir(t.workDir)).toEqual([]);
  });

  it('a run that throws closes what it opened in the same order and is reported failed', async () => {
    const t = await rig({ model: 'throws' });
    const summary = await runExecution(t.deps, t.job, new AbortController().signal);
    expect(summary).toMatchObject({ status: 'failed', document: { error: { code: 'internal' } } });
    expect(t.order.filter((step) => !step.startsWith('upload'))).toEqual(['model.turn', 'live-view.detach', 'video.stop', 'session.close', 'report failed (scratch kept)', 'live.close']);
    expect(existsSync(t.workDir) ? await readdir(t.workDir) : []).toEqual([]);
  });

  it('a browser that never opened: nothing of it to close, still reported, the live channel closed last', async () => {
    const t = await rig({ openSession: 'fails' });
    const summary = await runExecution(t.deps, t.job, new AbortController().signal);
    expect(summary).toMatchObject({ status: 'failed', document: { error: { code: 'browser_error' } } });
    expect(t.order.filter((step) => !step.startsWith('upload'))).toEqual(['report failed (scratch kept)', 'live.close']);
    expect(await readdir(t.workDir)).toEqual([]);
  });

  it('skipped: no browser, no upload, no report; the live channel and the scratch folder are closed', async () => {
    const t = await rig({ started: 'conflict' });
    const summary = await runExecution(t.deps, t.job, new AbortController().signal);
    expect(summary).toEqual({ status: 'skipped', executionId: 'exec-order', reason: 'already running elsewhere' });
    expect(t.order).toEqual(['live.close']);
    expect(await readdir(t.workDir)).toEqual([]);
  });
});
