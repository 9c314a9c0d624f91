import type { BrowserSandbox, PageLimits, Size } from '../browser/types.js';
import type { OutputDocument } from '../contract/output.js';
import type { ArtifactUrls } from '../contract/reports.js';
import type { ControlPlane } from '../control-plane/types.js';
import type { OpenedFile } from '../domain/input-files.js';
import type { HumanDesk } from '../human/types.js';
import type { LiveRelay } from '../live/types.js';
import type { RunBudget } from '../domain/usage.js';
import type { ModelClient, ModelInterceptor, ModelPricing } from '../model/types.js';
import type { VideoRecorder } from '../recorder/types.js';
import type { RunCacheStore } from '../run-cache/types.js';
import type { ArtifactStore } from '../storage/types.js';
import type { Logger, Tracing } from '../telemetry/types.js';
import type { ExecutionEventSource } from '../execution/events.js';
import type { ProfileSettings } from './profile.js';
import type { ActionSpace, ActionSpaceChoice, ActionSpaceOptions } from '../toolset/types.js';
import type { ActionSpaceKind } from '../domain/action-spaces.js';
import type { Specification } from '../contract/specification.js';
import type { RecordingFile } from '../contract/recording.js';

/** Everything one execution needs from the outside, wired by main.ts or the CLI. */
export interface RunnerDeps {
  /** Absent for `execution-worker run` (no API). */
  controlPlane?: ControlPlane;
  browser: BrowserSandbox;
  /** Absent when video is off or ffmpeg is unavailable. */
  recorder?: VideoRecorder;
  store: ArtifactStore;
  /**
   * The model client of one execution, and the stage of its pipeline (runner/model-pipeline.ts)
   * that records its turns for `recording.json`.
   */
  createModel(options: { modelId: string; toolVersion: string; display: Size }): {
    client: ModelClient;
    record: ModelInterceptor;
    recording(): RecordingFile;
  };
  /** Each model's prices (docs/model.md#prices): the cost in output.json, the metrics and a dollar budget. */
  pricing: ModelPricing;
  /** The action space of a model and the specification's `toolset` (docs/action-spaces.md), or why it cannot be had. */
  /**
   * The model's action space, and where the model is in its life (docs/model.md#retired-and-deprecated-models):
   * a retired model is refused (`field: 'model'`), a deprecated one comes with its end of life.
   */
  chooseActionSpace(modelId: string, requested: ActionSpaceKind | undefined): { ok: true; choice: ActionSpaceChoice; endOfLife?: string } | { ok: false; reason: string; field?: 'model' | 'toolset' };
  /** Builds the chosen action space on the execution's browser session. */
  createActionSpace(choice: ActionSpaceChoice, options: ActionSpaceOptions): ActionSpace;
  /** Rejects a specification the browser could not confine (bad allow-list, start URL outside it). */
  checkSpecification(spec: Specification, startUrl: string): void;
  /** The allow-list's verdict on an http(s) input file URL, before anything is fetched. */
  checkFileUrl(url: string, allowedDomains: readonly string[]): { ok: true } | { ok: false; reason: string };
  /**
   * Opens an input file (`s3://` with the worker's S3 settings, `http(s)://` under the
   * allow-list's confinement). Misses are reasons; `onBlocked` hears each refused request.
   */
  openInputFile(
    url: string,
    allowedDomains: readonly string[],
    signal: AbortSignal,
    onBlocked: (event: { url: string; layer: string; reason: string }) => void,
  ): Promise<OpenedFile>;
  /** The run cache's store; absent where there is none (the one-shot CLI). */
  runCache?: RunCacheStore;
  /** Browser profiles' store and keys (docs/profiles.md); without keys a `profile` is refused. */
  profiles?: ProfileSettings;
  logger: Logger;
  settings: RunnerSettings;
  /** The live view of running executions (the daemon's, over Redis); absent for `run`. */
  live?: LiveRelay;
  /** Where a run that waits for a person hears their answer (the daemon's Redis); absent for `run`. */
  human?: HumanDesk;
  /**
   * Subscribers of every execution's events (the daemon's metrics), each given the stream of an
   * execution as it opens. A new observer of every run goes here: the runner does not change.
   */
  observers?: ReadonlyArray<(events: ExecutionEventSource, executionId: string) => void>;
  /** Where the execution's trace goes (docs/operations.md#traces); absent: nowhere, at no cost. */
  tracing?: Tracing;
  /** Set when `createModel` replays a recording instead of calling a model (docs/counters-and-artifacts.md#playback). */
  playback?: Playback;
  now?: () => number;
}

/** What output.json says of a replayed recording, and the one workflow it may replay. */
export interface Playback extends PlaybackReport {
  /** The prompt of the workflow the recording was made of: any other fails (model_error) instead of replaying it. Absent: any. */
  onlyPrompt?: string;
}

export interface RunnerSettings {
  /** RUN_CACHE: replay and keep workflow versions' runs (docs/run-cache.md). */
  runCache: boolean;
  defaultModel: string;
  maxSteps: number;
  timeoutMs: number;
  /** HUMAN_TIMEOUT_MS: how long a run may wait for a person when its specification does not say (0: no asking). */
  humanTimeoutMs: number;
  viewport: Size;
  /** Scratch folder; each execution gets a folder of its own below it. */
  workDir: string;
  /** Keep the screenshots the model saw as `steps/NNN.jpg` artifacts (STEP_SCREENSHOTS). */
  stepScreenshots: boolean;
  /** Values never to appear in artifacts (API keys). */
  secrets: string[];
  /** RUN_BUDGET_TOKENS, RUN_BUDGET_USD: a run's caps when its specification sets none (docs/specification.md#budget). */
  budget: RunBudget;
  /** DOWNLOAD_MAX_BYTES: a download past it is cancelled. */
  downloadMaxBytes: number;
  /** BROWSER_MEMORY_MAX_BYTES: past it the execution ends with resource_limit; 0 or absent: off (docs/security.md#limits). */
  browserMemoryMaxBytes?: number;
  /** SCRATCH_DISK_MAX_BYTES: the same for what the execution writes to its scratch folder. */
  scratchDiskMaxBytes?: number;
  /** INPUT_FILE_MAX_BYTES, INPUT_FILE_TIMEOUT_MS, INPUT_FILE_BUCKETS (docs/files-and-codes.md). */
  inputFileMaxBytes: number;
  inputFileTimeoutMs: number;
  inputFileBuckets: readonly string[];
  /**
   * BROWSER_TABS_MAX, CONSOLE_LINE_MAX_CHARS, CONSOLE_ENTRIES_MAX, CONSOLE_BYTES_MAX: the limits on
   * what an execution's pages make (docs/security.md#limits); absent, the browser's defaults.
   */
  pageLimits?: PageLimits;
}

import type { PlaybackReport } from '../contract/output.js';

export type ExecutionSummary =
  | { status: 'skipped'; executionId: string; reason: string }
  | {
      status: OutputDocument['status'];
      executionId: string;
      document: OutputDocument;
      urls: ArtifactUrls;
      reported: boolean;
      /** The input with every secret as its placeholder; undefined when the input was not accepted. */
      maskedInput: unknown;
    };
