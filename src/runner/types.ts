import type { ComputerToolVersion, ExecuteComputerAction } from '../agent/action-types.js';
import type { BrowserSandbox, Size } from '../browser/types.js';
import type { ControlPlane, Counters } from '../control-plane/types.js';
import type { ErrorCode } from '../domain/errors.js';
import type { LiveRelay } from '../live/types.js';
import type { Specification } from '../domain/specification.js';
import type { ModelClient, RecordingFile, TokenUsage } from '../model/types.js';
import type { VideoRecorder } from '../recorder/types.js';
import type { ArtifactStore } from '../storage/types.js';
import type { Logger } from '../telemetry/types.js';

/** Everything one execution needs from the outside, wired by main.ts or the CLI. */
export interface RunnerDeps {
  /** Absent for `execution-worker run` (no API). */
  controlPlane?: ControlPlane;
  browser: BrowserSandbox;
  /** Absent when video is off or ffmpeg is unavailable. */
  recorder?: VideoRecorder;
  store: ArtifactStore;
  /** Creates the model client of one execution, recording its turns for `recording.json`. */
  createModel(options: { modelId: string; toolVersion: ComputerToolVersion; display: Size }): {
    client: ModelClient;
    recording(): RecordingFile;
  };
  /** Which computer tool version (and beta flag) a model speaks. */
  resolveTool(modelId: string): { version: ComputerToolVersion; beta: string; supportsZoom: boolean };
  /** Rejects a specification the browser could not confine (bad allow-list, start URL outside it). */
  checkSpecification(spec: Specification, startUrl: string): void;
  executeAction: ExecuteComputerAction;
  logger: Logger;
  settings: RunnerSettings;
  /** The live view of running executions (the daemon's, over Redis); absent for `run`. */
  live?: LiveRelay;
  /** Each event of each execution, after redaction (metrics, debug logging). */
  observe?: (executionId: string, type: string, fields: Record<string, unknown>) => void;
  now?: () => number;
}

export interface RunnerSettings {
  defaultModel: string;
  maxSteps: number;
  timeoutMs: number;
  viewport: Size;
  /** Scratch folder; each execution gets a folder of its own below it. */
  workDir: string;
  /** Keep the screenshots the model saw as `steps/NNN.jpg` artifacts (STEP_SCREENSHOTS). */
  stepScreenshots: boolean;
  /** Values never to appear in artifacts (API keys). */
  secrets: string[];
  /** Price per million tokens, for the estimated cost in output.json. */
  pricing?: TokenPricing;
}

export interface TokenPricing {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok: number;
  cacheWritePerMTok: number;
}

/** `output.json` (contract §5). */
export interface OutputDocument {
  status: 'completed' | 'failed';
  output: unknown;
  error: { code: ErrorCode; message: string } | null;
  counters: Counters & { durationMs: number };
  usage: TokenUsage & { estimatedCostUsd: number | null };
}

export type ExecutionSummary =
  | { status: 'skipped'; executionId: string; reason: string }
  | {
      status: 'completed' | 'failed';
      executionId: string;
      document: OutputDocument;
      urls: { outputUrl: string | null; videoUrl: string | null; logsUrl: string | null };
      reported: boolean;
    };
