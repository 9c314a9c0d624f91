import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DownloadEvent } from '../browser/types.js';
import type { ExecutionError } from '../contract/errors.js';
import type { RunBudget } from '../domain/usage.js';
import { emptyCacheReport } from '../domain/run-cache.js';
import { createSecretVault, type SecretVault } from '../domain/secrets.js';
import type { LiveChannel } from '../live/types.js';
import type { FinishedVideo } from '../recorder/types.js';
import { createEventLog, type EventLog } from '../telemetry/event-log.js';
import { scrubFromProcessLog } from '../telemetry/log-secrets.js';
import type { Logger } from '../telemetry/types.js';
import { ARTIFACT_FILES } from './artifacts.js';
import { createExecutionEvents, type ExecutionEventStream } from '../execution/events.js';
import type { Scope } from './scope.js';
import { createStepScreenshots, type StepScreenshots } from './step-screenshots.js';
import type { RunnerDeps } from './types.js';
import { noCounters, type RunCounters } from '../execution/counters.js';
import type { AgentOutcome } from '../execution/outcome.js';
import type { HumanExchange, CacheReport, LimitReport } from '../contract/output.js';
import type { JobData } from '../contract/job.js';
import type { RecordingFile } from '../contract/recording.js';
import type { ProfileReport } from '../contract/profile.js';

/**
 * What every phase of one execution shares (run-execution.ts): its job, its scratch folder, its
 * event stream and the subscribers that outlive the browser (logs.jsonl, metrics, live view, step
 * screenshots), all opened into the execution's scope.
 */
export interface ExecutionContext {
  readonly deps: RunnerDeps;
  readonly job: JobData;
  readonly log: Logger;
  readonly now: () => number;
  /** The caller's signal (job lock lost, shutdown); the browser phase adds the run's deadline. */
  readonly outerSignal: AbortSignal;
  readonly workDir: string;
  readonly events: ExecutionEventStream;
  readonly eventLog: EventLog;
  readonly live: LiveChannel | undefined;
  readonly stepShots: StepScreenshots | undefined;
  /**
   * The run's secrets. The one cell that changes: prepare replaces the worker's vault with the
   * input's (and the profile's) before anything can show them, and the process log and the event
   * stream redact with whichever vault is here when they write.
   */
  readonly secrets: { vault: SecretVault };
}

/** A download completed and kept for upload. */
export type KeptDownload = Required<Pick<DownloadEvent, 'name' | 'url' | 'bytes' | 'sha256' | 'contentType' | 'path'>>;

/** How a run ended, for finalise: what the phases that ran left behind. */
export interface RunEnd {
  outcome: AgentOutcome;
  /** Absent when the API was never told `started`: the run lasted 0 ms. */
  startedAtMs?: number;
  endedAtMs: number;
  /** What the run's events counted (execution/counters.ts). */
  counters: RunCounters;
  cache: CacheReport;
  downloads: KeptDownload[];
  video: FinishedVideo | null;
  stepsVtt: string | null;
  human: readonly HumanExchange[];
  profile?: ProfileReport;
  recording?: () => RecordingFile;
  /** The caps the run had; absent when it failed before they were known. */
  budget?: RunBudget;
  /** The limits its pages reached (docs/security.md#limits), as output.json lists them. */
  limits?: LimitReport[];
}

/** A run that failed before the browser: no steps, no video. */
export function notRun(ctx: ExecutionContext, error: ExecutionError, profile?: ProfileReport): RunEnd {
  return {
    outcome: failure(error),
    endedAtMs: ctx.now(),
    counters: noCounters(),
    cache: emptyCacheReport(),
    downloads: [],
    video: null,
    stepsVtt: null,
    human: [],
    ...(profile ? { profile } : {}),
  };
}

export function failure(error: ExecutionError): AgentOutcome {
  return { status: 'failed', code: error.code, message: error.message };
}

/** Opens what the execution keeps to its end, each into `scope`. */
export async function openExecution(deps: RunnerDeps, job: JobData, outerSignal: AbortSignal, log: Logger, scope: Scope): Promise<ExecutionContext> {
  const now = deps.now ?? Date.now;
  const secrets = { vault: createSecretVault(undefined, undefined, deps.settings.secrets) };
  // The process log scrubs this run's secrets (whichever vault holds them by then) until it ends.
  scope.use('process-log scrub', scrubFromProcessLog((text) => secrets.vault.redact(text)), (unscrub) => unscrub());
  const workDir = path.join(deps.settings.workDir, `${safeName(job.executionId)}-${randomUUID().slice(0, 8)}`);
  await mkdir(workDir, { recursive: true });
  scope.defer('scratch folder', () => rm(workDir, { recursive: true, force: true }));

  const events = createExecutionEvents({
    executionId: job.executionId,
    redact: (value) => secrets.vault.redactValue(value),
    now,
    onError: (error, type) => log.warn({ err: error, type }, 'an execution event subscriber failed'),
  });
  // Closed by finalise before the upload; the scope closes it on the paths that upload nothing.
  const eventLog = scope.use('event log', createEventLog(path.join(workDir, ARTIFACT_FILES.logs.name)), (file) => file.close());
  events.onLine((line) => eventLog.write(line));
  for (const observe of deps.observers ?? []) observe(events, job.executionId);
  // Viewers learn the run is over once its report is in (finalise); on other paths, here.
  const live = deps.live ? scope.use('live channel', deps.live.open(job.executionId), (channel) => channel.close()) : undefined;
  if (live) events.onLine((line) => live.event(line));
  const stepShots = deps.settings.stepScreenshots ? createStepScreenshots({ dir: workDir, events, logger: log }) : undefined;
  return { deps, job, log, now, outerSignal, workDir, events, eventLog, live, stepShots, secrets };
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80);
}
