import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRunStats, type AgentOutcome, type RunStats } from '../agent/loop.js';
import type { CacheReport } from '../domain/run-cache.js';
import { runWithCache } from '../run-cache/cached-run.js';
import { createAskHuman, type AskHuman } from '../agent/ask-human.js';
import { createHumanGate, type RunnerHumanGate } from './human-gate.js';
import type { BrowserSession, DownloadEvent } from '../browser/types.js';
import type { CompletedReport, FailedReport } from '../control-plane/types.js';
import type { LiveChannel } from '../live/types.js';
import { ExecutionError, errorFromSignal, isExecutionError, toExecutionError } from '../domain/errors.js';
import { findInputFiles, type InputFile } from '../domain/input-files.js';
import { parseJobData, readableExecutionId, type JobData } from '../domain/job.js';
import { compileSchema, type SchemaValidator } from '../domain/json-schema.js';
import { createSecretVault, type SecretVault } from '../domain/secrets.js';
import { scrubFromProcessLog } from '../telemetry/log-secrets.js';
import { parseSpecification, type Specification } from '../domain/specification.js';
import type { RecordingFile } from '../model/types.js';
import type { ActiveRecording, FinishedVideo } from '../recorder/types.js';
import { createEventLog, type EventLog } from '../telemetry/event-log.js';
import type { ActionSpace, ActionSpaceChoice } from '../toolset/types.js';
import { ARTIFACT_FILES, uploadArtifacts, uploadDownloads, writeJson, type ArtifactKind } from './artifacts.js';
import { createExecutionSignal } from './deadline.js';
import { stageInputFiles } from './input-files.js';
import { attachLiveView, type LiveView } from './live-view.js';
import { resolveJob } from './resolve.js';
import { RunProfile } from './profile.js';
import { createStepScreenshots, type StepScreenshots } from './step-screenshots.js';
import type { ExecutionSummary, OutputDocument, RunnerDeps, SavedDownload } from './types.js';

/**
 * Runs one execution from raw job data to its final report. States, in order:
 *   validate → resolve → check → input files → started → browser → agent → finalise → upload → report.
 * Finalisation always runs in the same order, whatever happened before it.
 */
export async function runExecution(deps: RunnerDeps, rawJob: unknown, outerSignal: AbortSignal): Promise<ExecutionSummary> {
  const now = deps.now ?? Date.now;
  let job: JobData;
  try {
    job = parseJobData(rawJob);
  } catch (error) {
    const executionId = readableExecutionId(rawJob);
    // Without a readable id there is nobody to report to: the caller fails the job.
    if (!executionId) throw error;
    job = { executionId };
    const early = new Execution(deps, job, outerSignal, now);
    return early.failEarly(toExecutionError(error, 'invalid_job')).finally(() => early.dispose());
  }
  const execution = new Execution(deps, job, outerSignal, now);
  return execution.run().finally(() => execution.dispose());
}

class Execution {
  private readonly log;
  private readonly stats: RunStats = createRunStats();
  private vault: SecretVault;
  private workDir = '';
  private events: EventLog | undefined;
  private startedAtMs: number | undefined;
  private recording: (() => RecordingFile) | undefined;
  /** Fetched before `started` (docs/files-and-codes.md); offered to the pages' file inputs. */
  private inputFiles: InputFile[] = [];
  private versionId: string | undefined;
  private cache: CacheReport = { used: false, replayedSteps: 0, modelSteps: 0, fallbackAtStep: null, reason: null };
  /** Downloads completed and kept, in order; uploaded with the artifacts. */
  private readonly downloads: Array<Required<Pick<DownloadEvent, 'name' | 'url' | 'bytes' | 'sha256' | 'contentType' | 'path'>>> = [];
  private live: LiveChannel | undefined;
  private liveView: LiveView | undefined;
  private stepShots: StepScreenshots | undefined;
  /** `ask_human` and its wait, when the run may wait for a person. */
  private human: { ask: AskHuman; gate: RunnerHumanGate } | undefined;
  /** The specification's browser profile, loaded before `started` (docs/profiles.md). */
  private profile: RunProfile | undefined;
  private readonly unscrub: () => void;

  constructor(
    private readonly deps: RunnerDeps,
    private readonly job: JobData,
    private readonly outerSignal: AbortSignal,
    private readonly now: () => number,
  ) {
    this.log = deps.logger.child({ executionId: job.executionId });
    this.vault = createSecretVault(undefined, undefined, deps.settings.secrets);
    // The process log scrubs this run's secrets (whichever vault holds them by then) until it ends.
    this.unscrub = scrubFromProcessLog((text) => this.vault.redact(text));
  }

  /** The run is over: its secrets leave the process log's redaction. */
  dispose(): void {
    this.unscrub();
  }

  /** A failure found before anything ran (bad job data): reported with logs and output. */
  async failEarly(error: ExecutionError): Promise<ExecutionSummary> {
    await this.openScratch();
    this.events?.emit('execution_failed_validation', { code: error.code, message: error.message });
    return this.finish({ status: 'failed', code: error.code, message: error.message }, null, null);
  }

  async run(): Promise<ExecutionSummary> {
    await this.openScratch();
    const { deps, job } = this;
    this.events!.emit('execution_received', { workflowId: job.workflowId, workflowVersionId: job.workflowVersionId });

    // Everything before `started` may fail without a browser: bad specification or input.
    let spec: Specification;
    let startUrl: string;
    let validateOutput: SchemaValidator | undefined;
    let space: { choice: ActionSpaceChoice };
    try {
      const resolved = await resolveJob(job, deps.controlPlane, this.outerSignal);
      this.versionId = resolved.workflowVersionId ?? job.workflowVersionId;
      spec = parseSpecification(resolved.rawSpecification);
      startUrl = spec.startUrl ?? `https://${spec.allowedDomains[0]!.replace(/^\*\./, '')}/`;
      deps.checkSpecification(spec, startUrl);
      if (spec.approvals?.length && !deps.human) throw new ExecutionError('invalid_specification', 'approvals need a person to answer, and this worker has nobody to ask (no Redis): run it on the daemon');
      if (spec.profile !== undefined) RunProfile.usable(deps.profiles, spec.profile);
      const chosen = deps.chooseActionSpace(spec.model ?? deps.settings.defaultModel, spec.toolset);
      if (!chosen.ok) throw new ExecutionError('invalid_specification', `toolset: ${chosen.reason}`);
      space = chosen;
      validateOutput = spec.outputSchema === undefined ? undefined : compileOrReject(spec.outputSchema, 'outputSchema');
      if (spec.payloadSchema !== undefined) {
        const check = compileOrReject(spec.payloadSchema, 'payloadSchema')(resolved.inputPayload ?? null);
        if (!check.ok) throw new ExecutionError('invalid_input', `the input payload does not match the payload schema: ${check.errors}`);
      }
      // Input files are shown to the model by name; their URLs and local paths never are.
      const files = findInputFiles(resolved.inputPayload, spec.payloadSchema);
      if (spec.profile !== undefined) this.profile = await RunProfile.load(deps.profiles, spec.profile, this.events!, this.log, this.outerSignal);
      // A value of a saved profile that a page shows is redacted like any secret.
      this.vault = createSecretVault(files.payload, spec.payloadSchema, [...deps.settings.secrets, ...(this.profile?.secrets() ?? [])]);
      this.inputFiles = await stageInputFiles({
        refs: files.files,
        deps,
        allowedDomains: spec.allowedDomains,
        dir: path.join(this.workDir, 'inputs'),
        events: this.events!,
        signal: this.outerSignal,
      });
    } catch (error) {
      if (this.outerSignal.aborted) return this.finish(failure(errorFromSignal(this.outerSignal)), null, null);
      const failed = toExecutionError(error);
      this.events!.emit('error', { phase: 'validate', code: failed.code, message: failed.message });
      return this.finish(failure(failed), null, null);
    }

    if (deps.controlPlane) {
      const startedAt = new Date(this.now());
      let started;
      try {
        started = await deps.controlPlane.markStarted(job.executionId, startedAt.toISOString(), this.outerSignal);
      } catch (error) {
        // The API could not be told: do not act on the business system unannounced.
        const failed = this.outerSignal.aborted ? errorFromSignal(this.outerSignal) : toExecutionError(error);
        this.events!.emit('error', { phase: 'started', code: failed.code, message: failed.message });
        return this.finish(failure(failed), null, null);
      }
      if (!started.ok) {
        this.log.warn({ status: started.status, reason: started.reason }, 'execution is no longer runnable; not running it');
        this.events!.emit('execution_skipped', { status: started.status, reason: started.reason });
        this.live?.close();
        await this.events!.close();
        await rm(this.workDir, { recursive: true, force: true });
        return { status: 'skipped', executionId: job.executionId, reason: started.reason };
      }
      this.startedAtMs = startedAt.getTime();
    } else {
      this.startedAtMs = this.now();
    }
    this.events!.setOrigin(this.startedAtMs);
    this.events!.emit('execution_started', { startUrl, model: spec.model ?? deps.settings.defaultModel, toolset: space.choice.kind, computerTool: space.choice.kind === 'computer' ? space.choice.computer.type : undefined });

    const run = createExecutionSignal(this.outerSignal, spec.timeoutMs ?? deps.settings.timeoutMs);
    let session: BrowserSession | undefined;
    let video: ActiveRecording | undefined;
    let outcome: AgentOutcome;
    let finishedVideo: FinishedVideo | null = null;
    let stepsVtt: string | null = null;
    try {
      outcome = await this.drive(spec, startUrl, validateOutput, space, run, (s) => (session = s), (v) => (video = v));
    } catch (error) {
      const failed = run.signal.aborted ? errorFromSignal(run.signal) : toExecutionError(error);
      if (!isExecutionError(error) || error !== failed) this.log.debug({ err: String(error) }, 'run ended by error');
      this.events!.emit('error', { phase: 'run', code: failed.code, message: failed.message });
      outcome = failure(failed);
    } finally {
      run.dispose();
    }
    const endedAtMs = this.now();
    await this.liveView?.detach();
    // Fixed order: video (needs the page alive to the end), then the browser.
    const activeVideo = video as ActiveRecording | undefined;
    if (activeVideo) {
      finishedVideo = await activeVideo.stop(endedAtMs).catch((error: unknown) => {
        this.log.error({ err: String(error) }, 'video could not be finalised');
        return null;
      });
      stepsVtt = activeVideo.stepsVtt();
    }
    await this.human?.gate.release();
    const openSession = session as BrowserSession | undefined;
    // The profile: its sign-in health, and its state saved only by a completed run, before the browser closes.
    if (this.profile && openSession) {
      this.profile.noteSignIn(openSession);
      if (outcome.status === 'completed') await this.profile.save(openSession, endedAtMs, this.outerSignal);
    }
    if (openSession) await openSession.close().catch((error: unknown) => this.log.warn({ err: String(error) }, 'closing the browser session failed'));
    return this.finish(outcome, finishedVideo, stepsVtt, endedAtMs);
  }

  private async drive(
    spec: Specification,
    startUrl: string,
    validateOutput: SchemaValidator | undefined,
    chosen: { choice: ActionSpaceChoice },
    run: ReturnType<typeof createExecutionSignal>,
    onSession: (session: BrowserSession) => void,
    onVideo: (video: ActiveRecording) => void,
  ): Promise<AgentOutcome> {
    const { deps, job } = this;
    const events = this.events!;
    const modelId = spec.model ?? deps.settings.defaultModel;

    let session: BrowserSession;
    const openingAt = this.now();
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
          downloads: { dir: path.join(this.workDir, 'downloads'), maxBytes: deps.settings.downloadMaxBytes },
          onDownload: (event) => this.onDownload(event),
          inputFiles: this.inputFiles.map((file) => ({ name: file.name, path: file.path })),
          ...this.profile?.sessionOptions(),
        },
        run.signal,
      );
    } catch (error) {
      if (run.signal.aborted) throw errorFromSignal(run.signal);
      throw isExecutionError(error) ? error : new ExecutionError('browser_error', `could not start the browser: ${String(error instanceof Error ? error.message : error)}`, { cause: error });
    }
    onSession(session);
    const space = deps.createActionSpace(chosen.choice, {
      session,
      secrets: this.vault,
      allowJavascript: spec.allowJavascript === true,
      inputFiles: this.inputFiles.map((f) => ({ name: f.name, bytes: f.bytes, contentType: f.contentType })),
    });
    events.emit('browser_ready', { durationMs: this.now() - openingAt, viewport: session.viewport, display: space.display, toolType: space.toolType });

    let video: ActiveRecording | undefined;
    if (deps.recorder) {
      try {
        const videoAt = this.now();
        video = await deps.recorder.start({ session, outputPath: path.join(this.workDir, ARTIFACT_FILES.video.name), startedAtMs: this.startedAtMs!, signal: run.signal });
        onVideo(video);
        events.emit('video_started', { durationMs: this.now() - videoAt });
      } catch (error) {
        // A run without video is still a run: log it, report a null video url.
        this.log.error({ err: String(error) }, 'video recording could not start');
        events.emit('error', { phase: 'video', code: 'internal', message: `video recording could not start: ${String(error)}` });
      }
    }
    if (this.live) this.liveView = attachLiveView({ channel: this.live, session, ...(video ? { video } : {}), logger: this.log });

    this.human = this.openHuman(spec, session, space, run, video);
    const model = deps.createModel({ modelId, toolVersion: space.toolType, display: space.display });
    this.recording = model.recording;
    // The run cache (docs/run-cache.md): on unless the worker or the workflow turned it off, and only
    // for a known version (the cache is the version's).
    const versionId = this.versionId;
    // A run with approvals is never replayed: a replay must not take a gated action unasked.
    const cacheOn = deps.runCache !== undefined && deps.settings.runCache && spec.cache !== false && versionId !== undefined && !spec.approvals?.length;
    const { outcome, cache } = await runWithCache({
      ...(cacheOn ? { store: deps.runCache!, versionId: versionId! } : {}),
      executionId: job.executionId,
      keep: () => (this.human?.ask.exchanges.length ?? 0) === 0,
      agentDeps: {
        ...(this.human ? { human: this.human.ask } : {}),
        model: this.stepShots ? this.stepShots.wrap(model.client) : model.client,
        space,
        session,
        events,
        onAction: (mark) => video?.mark({ ...mark, label: this.vault.redact(mark.label) }),
        now: this.now,
      },
      agentInput: {
        spec,
        modelId,
        vault: this.vault,
        maxSteps: spec.maxSteps ?? deps.settings.maxSteps,
        startUrl,
        ...(validateOutput ? { validateOutput } : {}),
        ...(this.inputFiles.length > 0 ? { inputFiles: this.inputFiles } : {}),
        signal: run.signal,
      },
      stats: this.stats,
      logger: this.log,
      now: this.now,
    });
    this.cache = cache;
    return outcome;
  }

  /**
   * `ask_human` for a run that may wait for a person (docs/human-in-the-loop.md#when-the-agent-may-ask):
   * a `humanTimeoutMs` above 0 (the specification's, else HUMAN_TIMEOUT_MS), or approvals, which
   * wait up to the run's own time limit when no human timeout is set.
   */
  private openHuman(
    spec: Specification,
    session: BrowserSession,
    space: Pick<ActionSpace, 'opening'>,
    run: ReturnType<typeof createExecutionSignal>,
    video: ActiveRecording | undefined,
  ): { ask: AskHuman; gate: RunnerHumanGate } | undefined {
    const { deps } = this;
    const configured = spec.humanTimeoutMs ?? deps.settings.humanTimeoutMs;
    const timeoutMs = configured > 0 ? configured : spec.approvals?.length ? (spec.timeoutMs ?? deps.settings.timeoutMs) : 0;
    if (!deps.human || timeoutMs <= 0) return undefined;
    const gate = createHumanGate({
      executionId: this.job.executionId,
      desk: deps.human,
      ...(deps.controlPlane ? { controlPlane: deps.controlPlane } : {}),
      session,
      events: this.events!,
      logger: this.log,
      timeoutMs,
      pauseDeadline: () => run.pause(),
      onInputMark: (mark) => video?.mark(mark),
      redact: (text) => this.vault.redact(text),
      now: this.now,
    });
    const ask = createAskHuman({ gate, events: this.events!, view: (signal) => space.opening(signal), now: this.now });
    return { ask, gate };
  }

  /** A download's step in logs.jsonl (no local path); a completed one is kept for upload. */
  private onDownload(event: DownloadEvent): void {
    const { path: file, ...shown } = event;
    this.events?.emit('download', { ...shown });
    const { name, url, bytes, sha256, contentType } = event;
    if (event.state === 'completed' && file && bytes !== undefined && sha256 && contentType) this.downloads.push({ name, url, bytes, sha256, contentType, path: file });
  }

  private async openScratch(): Promise<void> {
    this.workDir = path.join(this.deps.settings.workDir, `${safeName(this.job.executionId)}-${randomUUID().slice(0, 8)}`);
    await mkdir(this.workDir, { recursive: true });
    const { observe, live, settings } = this.deps;
    this.live = live?.open(this.job.executionId);
    this.events = createEventLog({
      path: path.join(this.workDir, ARTIFACT_FILES.logs.name),
      executionId: this.job.executionId,
      redact: (value) => this.vault.redactValue(value),
      now: this.now,
      onEvent: (type, fields, line) => {
        observe?.(this.job.executionId, type, fields);
        this.stepShots?.noteEvent(fields);
        this.live?.event(line);
      },
    });
    if (settings.stepScreenshots) this.stepShots = createStepScreenshots({ dir: this.workDir, events: this.events, logger: this.log });
  }

  /** Writes output.json and the transcript, uploads everything, reports. */
  private async finish(outcome: AgentOutcome, video: FinishedVideo | null, stepsVtt: string | null, endedAtMs = this.now()): Promise<ExecutionSummary> {
    const { deps, job } = this;
    const durationMs = this.startedAtMs === undefined ? 0 : Math.max(0, endedAtMs - this.startedAtMs);
    const downloadUrls = await uploadDownloads({ store: deps.store, executionId: job.executionId, downloads: this.downloads, logger: this.log });
    const downloads: SavedDownload[] = this.downloads.map(({ path: _file, ...saved }, i) => ({ ...saved, artifactUrl: downloadUrls[i] ?? null }));
    const document: OutputDocument = {
      status: outcome.status,
      output: outcome.status === 'completed' ? this.vault.redactValue(outcome.output) : null,
      error: outcome.status === 'failed' ? { code: outcome.code, message: this.vault.redact(outcome.message) } : null,
      counters: { nSteps: this.stats.nSteps, nAgentActions: this.stats.nAgentActions, nScreenshots: this.stats.nScreenshots, durationMs },
      usage: { ...this.stats.usage, estimatedCostUsd: estimateCost(this.stats.usage, deps.settings.pricing) },
      downloads: this.vault.redactValue(downloads),
      cache: { ...this.cache, modelSteps: this.cache.used ? this.cache.modelSteps : this.stats.nSteps },
      human: this.vault.redactValue(this.human?.ask.exchanges.map((exchange) => ({ ...exchange })) ?? []),
      ...(this.profile ? { profile: { ...this.profile.report } } : {}),
    };
    const events = this.events!;
    events.emit(outcome.status === 'completed' ? 'execution_completed' : 'execution_failed', {
      ...(document.error ?? {}),
      counters: document.counters,
      usage: document.usage,
      video: video ? { durationMs: video.durationMs, frames: video.frames, droppedFrames: video.droppedFrames } : null,
    });
    await events.close();

    const files: Partial<Record<ArtifactKind, string>> = { logs: events.path };
    try {
      files.output = await writeJson(this.workDir, ARTIFACT_FILES.output.name, document);
      if (this.recording) files.recording = await writeJson(this.workDir, ARTIFACT_FILES.recording.name, this.vault.redactValue(this.recording()));
      if (video) files.video = video.path;
      if (stepsVtt !== null && video) {
        files.steps = path.join(this.workDir, ARTIFACT_FILES.steps.name);
        // Labels were redacted as they were marked; the whole track passes once more (cue escaping).
        await writeFile(files.steps, this.vault.redact(stepsVtt));
      }
    } catch (error) {
      this.log.error({ err: String(error) }, 'could not write artifacts');
    }
    const extras = (await this.stepShots?.files()) ?? [];
    const uploaded = await uploadArtifacts({ store: deps.store, executionId: job.executionId, files, extras, logger: this.log });
    const urls = { outputUrl: uploaded.output, videoUrl: uploaded.video, logsUrl: uploaded.logs };

    let reported = false;
    if (deps.controlPlane) {
      const counters = { nSteps: this.stats.nSteps, nAgentActions: this.stats.nAgentActions, nScreenshots: this.stats.nScreenshots };
      const at = new Date(this.now()).toISOString();
      try {
        if (outcome.status === 'completed') {
          const report: CompletedReport = { completedAt: at, durationMs, ...counters, ...urls };
          await deps.controlPlane.reportCompleted(job.executionId, report);
        } else {
          const report: FailedReport = { failedAt: at, error: document.error!, durationMs, ...counters, ...urls };
          await deps.controlPlane.reportFailed(job.executionId, report);
        }
        reported = true;
      } catch (error) {
        this.log.error({ err: String(error), status: outcome.status }, 'final report could not be delivered');
      }
    }
    // Viewers learn the run is over once its report is in: the dashboard then loads the artifacts.
    this.live?.close();
    this.log.info({ status: outcome.status, code: document.error?.code, ...document.counters, reported }, `execution ${outcome.status}`);
    await rm(this.workDir, { recursive: true, force: true }).catch(() => undefined);
    return { status: outcome.status, executionId: job.executionId, document, urls, reported, maskedInput: this.vault.maskedPayload };
  }
}

function failure(error: ExecutionError): AgentOutcome {
  return { status: 'failed', code: error.code, message: error.message };
}

function compileOrReject(schema: Specification['payloadSchema'], field: string): SchemaValidator {
  try {
    return compileSchema(schema!);
  } catch (error) {
    throw new ExecutionError('invalid_specification', `${field} is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function estimateCost(usage: RunStats['usage'], pricing: RunnerDeps['settings']['pricing']): number | null {
  if (!pricing) return null;
  const cost =
    (usage.inputTokens * pricing.inputPerMTok +
      usage.outputTokens * pricing.outputPerMTok +
      usage.cacheReadInputTokens * pricing.cacheReadPerMTok +
      usage.cacheCreationInputTokens * pricing.cacheWritePerMTok) /
    1_000_000;
  return Math.round(cost * 1_000_000) / 1_000_000;
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80);
}
