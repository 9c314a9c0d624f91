import path from 'node:path';
import { createAskHuman, type AskHuman } from '../agent/ask-human.js';
import type { BrowserSession, DownloadEvent, LimitReached } from '../browser/types.js';
import { ExecutionError, errorFromSignal, isExecutionError, toExecutionError } from '../contract/errors.js';
import { emptyCacheReport } from '../domain/run-cache.js';
import { resolveBudget } from '../domain/usage.js';
import type { ActiveRecording } from '../recorder/types.js';
import type { ActionSpace } from '../toolset/types.js';
import { ARTIFACT_FILES } from './artifacts.js';
import { runWithCache } from '../run-cache/cached-run.js';
import { createExecutionSignal, type ExecutionSignal } from './deadline.js';
import { failure, type ExecutionContext, type KeptDownload, type RunEnd } from './execution.js';
import { createHumanGate, type RunnerHumanGate } from './human-gate.js';
import { attachLiveView } from './live-view.js';
import type { Prepared } from './prepare.js';
import { Scope } from './scope.js';
import { runModels } from './model-pipeline.js';
import { meterRequests } from './usage-meter.js';
import { watchResources, type ResourceWatch } from './resource-watch.js';
import { countEvents } from '../execution/counters.js';
import type { AgentOutcome } from '../execution/outcome.js';

/**
 * The browser phase: the session, the video, the live view, the human gate, then the agent (or
 * the run cache's replay) under the execution's signal. Everything it opens goes into a scope of
 * its own, closed before it returns, in reverse and on every path. The order is fixed where it
 * matters: the live view detaches and the video stops (it needs the page to the end), the human
 * gate is released, the profile is saved (completed runs only), then the browser closes.
 */
export async function runBrowserPhase(ctx: ExecutionContext, plan: Prepared, startedAtMs: number): Promise<RunEnd> {
  const { deps, events, log, now } = ctx;
  const scope = new Scope((error, step) => log.warn({ err: error, step }, 'the browser phase could not close a resource'));
  /** What the run leaves behind, filled as it goes: a run that throws keeps what it did. */
  const ended: RunEnd = { outcome: failure(new ExecutionError('internal', 'the run did not end')), startedAtMs, endedAtMs: 0, counters: countEvents(events), cache: emptyCacheReport(), downloads: [], video: null, stepsVtt: null, human: [] };
  try {
    const run = scope.use('execution signal', createExecutionSignal(ctx.outerSignal, plan.spec.timeoutMs ?? deps.settings.timeoutMs), (signal) => signal.dispose());
    const watch: { current?: ResourceWatch } = {};
    try {
      ended.outcome = await drive(ctx, plan, run, scope, ended, watch);
    } catch (error) {
      const failed = run.signal.aborted ? errorFromSignal(run.signal) : toExecutionError(error);
      if (!isExecutionError(error) || error !== failed) log.debug({ err: String(error) }, 'run ended by error');
      events.emit('error', { phase: 'run', code: failed.code, message: failed.message });
      ended.outcome = failure(failed);
    } finally {
      // The ceilings watch the run only: what closing writes (the video's end) ends nothing.
      watch.current?.stop();
      // The deadline ends with the task: closing the browser is not held to it.
      run.dispose();
    }
    ended.endedAtMs = now();
  } finally {
    await scope.close();
  }
  if (plan.profile) ended.profile = { ...plan.profile.report };
  return ended;
}

/** Opens the browser and what watches it, each into `scope`, and runs the task. */
async function drive(ctx: ExecutionContext, plan: Prepared, run: ExecutionSignal, scope: Scope, ended: RunEnd, watch: { current?: ResourceWatch }): Promise<AgentOutcome> {
  const { deps, job, events, log, now } = ctx;
  const { spec } = plan;
  const openingAt = now();
  let session: BrowserSession;
  try {
    session = await deps.browser.openSession(
      {
        executionId: job.executionId,
        viewport: deps.settings.viewport,
        allowedDomains: spec.allowedDomains,
        onBlocked: (blocked) => events.emit('blocked', { ...blocked }),
        onCrash: (error) => {
          events.emit('browser_crashed', { message: error.message });
          run.abort(new ExecutionError('browser_error', `the browser died: ${error.message}`, { cause: error }));
        },
        downloads: { dir: path.join(ctx.workDir, 'downloads'), maxBytes: deps.settings.downloadMaxBytes },
        ...(deps.settings.pageLimits ? { limits: deps.settings.pageLimits } : {}),
        onLimit: (reached) => limitReached(ctx, ended, reached),
        onDownload: (event) => keepDownload(ctx, ended.downloads, event),
        inputFiles: plan.inputFiles.map((file) => ({ name: file.name, path: file.path })),
        ...plan.profile?.sessionOptions(),
      },
      run.signal,
    );
  } catch (error) {
    if (run.signal.aborted) throw errorFromSignal(run.signal);
    throw isExecutionError(error) ? error : new ExecutionError('browser_error', `could not start the browser: ${String(error instanceof Error ? error.message : error)}`, { cause: error });
  }
  scope.use('browser session', session, (s) => s.close().catch((error: unknown) => log.warn({ err: String(error) }, 'closing the browser session failed')));
  // The browser's memory and the scratch disk, sampled while the run is live (docs/security.md#limits).
  const { memoryBytes } = session;
  watch.current = scope.use(
    'resource watch',
    watchResources({
      ...(memoryBytes ? { memory: { maxBytes: deps.settings.browserMemoryMaxBytes ?? 0, read: (signal: AbortSignal) => memoryBytes.call(session, signal) } } : {}),
      // Input files are the worker's own fetch, under INPUT_FILE_MAX_BYTES: not counted.
      disk: { maxBytes: deps.settings.scratchDiskMaxBytes ?? 0, dir: ctx.workDir, skip: ['inputs'] },
      events,
      log,
      end: (reason) => run.abort(reason),
    }),
    (w) => w.stop(),
  );
  const { profile } = plan;
  if (profile) {
    // Its sign-in health, and its state saved only by a completed run, before the browser closes.
    scope.defer('profile', async () => {
      profile.noteSignIn(session);
      if (ended.outcome.status === 'completed') await profile.save(session, ended.endedAtMs, ctx.outerSignal);
    });
  }
  const space = deps.createActionSpace(plan.choice, {
    session,
    secrets: ctx.secrets.vault,
    allowJavascript: spec.allowJavascript === true,
    inputFiles: plan.inputFiles.map((f) => ({ name: f.name, bytes: f.bytes, contentType: f.contentType })),
  });
  events.emit('browser_ready', { durationMs: now() - openingAt, viewport: session.viewport, display: space.display, toolType: space.toolType });

  // Released after the video stops, before the profile is saved and the browser closes.
  const human = openHuman(ctx, plan, session, space, run);
  if (human) {
    ended.human = human.ask.exchanges;
    scope.use('human gate', human.gate, (gate) => gate.release());
  }
  const video = await startVideo(ctx, session, ended.startedAtMs!, run.signal, (reached) => limitReached(ctx, ended, reached));
  if (video) {
    // The steps track and click markers: the agent's actions and a person's clicks, as they touch the page.
    const unmark = events.on('timeline_mark', ({ label, point }, { atMs }) => video.mark({ atMs, label, ...(point ? { point } : {}) }));
    scope.defer('video', async () => {
      unmark();
      ended.video = await video.stop(ended.endedAtMs || now()).catch((error: unknown) => {
        log.error({ err: String(error) }, 'video could not be finalised');
        return null;
      });
      ended.stepsVtt = video.stepsVtt();
    });
  }
  if (ctx.live) scope.use('live view', attachLiveView({ channel: ctx.live, session, ...(video ? { video } : {}), logger: log }), (view) => view.detach());

  const model = deps.createModel({ modelId: plan.modelId, toolVersion: space.toolType, display: space.display });
  ended.recording = model.recording;
  // The run's one model pipeline (model-pipeline.ts): every request goes through the meter, whoever
  // sends it (the agent, the final check, a repair): its usage is priced there and its budget holds there.
  ended.budget = resolveBudget(spec.budget, deps.settings.budget);
  const models = runModels(model.client, { record: model.record, meter: meterRequests({ counters: ended.counters, budget: ended.budget, pricing: deps.pricing, events }), events });
  // The run cache (docs/run-cache.md): on unless the worker or the workflow turned it off, and only
  // for a known version (the cache is the version's). A run with approvals is never replayed: a
  // replay must not take a gated action unasked.
  const { versionId } = plan;
  const cacheOn = deps.runCache !== undefined && deps.settings.runCache && spec.cache !== false && versionId !== undefined && !spec.approvals?.length;
  const { outcome, cache } = await runWithCache({
    ...(cacheOn ? { store: deps.runCache!, versionId: versionId! } : {}),
    executionId: job.executionId,
    keep: () => (human?.ask.exchanges.length ?? 0) === 0,
    // The final check is no step: its picture is not a step's (steps/NNN.jpg keep the steps' numbers).
    checkModel: models.check,
    agentDeps: {
      ...(human ? { human: human.ask } : {}),
      model: models.steps,
      space,
      session,
      events,
      now,
    },
    agentInput: {
      spec,
      modelId: plan.modelId,
      vault: ctx.secrets.vault,
      maxSteps: spec.maxSteps ?? deps.settings.maxSteps,
      budget: ended.budget,
      startUrl: plan.startUrl,
      ...(plan.validateOutput ? { validateOutput: plan.validateOutput } : {}),
      ...(plan.inputFiles.length > 0 ? { inputFiles: plan.inputFiles } : {}),
      signal: run.signal,
    },
    stats: ended.counters,
    logger: log,
    now,
  });
  ended.cache = cache;
  return outcome;
}

/** The video, when a recorder is wired; a run without video is still a run (logged, a null video url). */
/**
 * A limit the pages reached (docs/security.md#limits): a warning of the process log, a
 * `resource_limit_reached` line of logs.jsonl and an entry of output.json's `limits`. The browser
 * and the recorder tell each limit once (per tab for a tab's own).
 */
function limitReached(ctx: ExecutionContext, ended: RunEnd, reached: LimitReached): void {
  ctx.log.warn({ ...reached }, `resource limit reached: ${reached.limit}`);
  ctx.events.emit('resource_limit_reached', { ...reached });
  (ended.limits ??= []).push({ ...reached });
}

async function startVideo(ctx: ExecutionContext, session: BrowserSession, startedAtMs: number, signal: AbortSignal, onLimit: (reached: LimitReached) => void): Promise<ActiveRecording | undefined> {
  const { deps, events, log, now } = ctx;
  if (!deps.recorder) return undefined;
  try {
    const videoAt = now();
    const video = await deps.recorder.start({ session, outputPath: path.join(ctx.workDir, ARTIFACT_FILES.video.name), startedAtMs, signal, onLimit });
    events.emit('video_started', { durationMs: now() - videoAt });
    return video;
  } catch (error) {
    log.error({ err: String(error) }, 'video recording could not start');
    events.emit('error', { phase: 'video', code: 'internal', message: `video recording could not start: ${String(error)}` });
    return undefined;
  }
}

/**
 * `ask_human` for a run that may wait for a person (docs/human-in-the-loop.md#when-the-agent-may-ask):
 * a `humanTimeoutMs` above 0 (the specification's, else HUMAN_TIMEOUT_MS), or approvals, which
 * wait up to the run's own time limit when no human timeout is set.
 */
function openHuman(ctx: ExecutionContext, plan: Prepared, session: BrowserSession, space: Pick<ActionSpace, 'opening'>, run: ExecutionSignal): { ask: AskHuman; gate: RunnerHumanGate } | undefined {
  const { deps } = ctx;
  const { spec } = plan;
  const configured = spec.humanTimeoutMs ?? deps.settings.humanTimeoutMs;
  const timeoutMs = configured > 0 ? configured : spec.approvals?.length ? (spec.timeoutMs ?? deps.settings.timeoutMs) : 0;
  if (!deps.human || timeoutMs <= 0) return undefined;
  const gate = createHumanGate({
    executionId: ctx.job.executionId,
    desk: deps.human,
    ...(deps.controlPlane ? { controlPlane: deps.controlPlane } : {}),
    session,
    events: ctx.events,
    logger: ctx.log,
    timeoutMs,
    pauseDeadline: () => run.pause(),
    redact: (text) => ctx.secrets.vault.redact(text),
    now: ctx.now,
  });
  const ask = createAskHuman({ gate, events: ctx.events, view: (signal) => space.opening(signal), now: ctx.now });
  return { ask, gate };
}

/** A download's step in logs.jsonl (no local path); a completed one is kept for upload. */
function keepDownload(ctx: ExecutionContext, kept: KeptDownload[], event: DownloadEvent): void {
  const { path: file, ...shown } = event;
  ctx.events.emit('download', { ...shown });
  const { name, url, bytes, sha256, contentType } = event;
  if (event.state === 'completed' && file && bytes !== undefined && sha256 && contentType) kept.push({ name, url, bytes, sha256, contentType, path: file });
}
