/**
 * The control-plane port: the operator's API as the worker sees it (docs/api.md).
 * Response shapes are the seed's (snake_case); request bodies are camelCase.
 */

/** An execution as `GET /api/executions/{id}` returns it (fields the worker reads). */
export interface ExecutionRecord {
  execution_uuid: string;
  workflow_uuid?: string | null;
  workflow_version_uuid?: string | null;
  status?: string | null;
  input_payload?: unknown;
  [key: string]: unknown;
}

/** A version as `GET /api/workflows/{workflow_uuid}/versions` lists it. */
export interface VersionRecord {
  workflow_version_uuid: string;
  workflow_uuid: string;
  specification: unknown;
  version?: number | null;
  is_current?: boolean | null;
  [key: string]: unknown;
}

export interface Counters {
  nSteps: number;
  nAgentActions: number;
  nScreenshots: number;
}

export interface ArtifactUrls {
  outputUrl: string | null;
  videoUrl: string | null;
  logsUrl: string | null;
}

export interface CompletedReport extends Counters, ArtifactUrls {
  completedAt: string;
  durationMs: number;
}

export interface FailedReport extends Counters, ArtifactUrls {
  failedAt: string;
  error: { code: string; message: string };
  durationMs: number;
}

/** The agent waits for a person (docs/human-in-the-loop.md). */
export interface WaitingReport {
  waitingAt: string;
  kind: 'question' | 'approval' | 'takeover';
  question: string;
  choices: string[] | null;
  timeoutAt: string;
}

/** A person answered and the run goes on. */
export interface ResumedReport {
  resumedAt: string;
  answeredBy: string | null;
}

export type StartedResult = { ok: true } | { ok: false; status: number; reason: string };

export interface ControlPlane {
  getExecution(executionId: string, signal: AbortSignal): Promise<ExecutionRecord>;
  listVersions(workflowId: string, signal: AbortSignal): Promise<VersionRecord[]>;
  /** `{ ok: false }` on 404/409: the execution is no longer runnable. */
  markStarted(executionId: string, startedAt: string, signal: AbortSignal): Promise<StartedResult>;
  /**
   * Final reports: retried with backoff and jitter for at least 10 minutes on network errors,
   * 429 and 5xx (they are never dropped silently); other 4xx are logged and given up. The
   * signal only stops retrying (shutdown), it never means "drop".
   */
  reportCompleted(executionId: string, report: CompletedReport, signal?: AbortSignal): Promise<void>;
  reportFailed(executionId: string, report: FailedReport, signal?: AbortSignal): Promise<void>;
  /**
   * A person is waited for, and the wait is over: retried like `markStarted`, then thrown. The
   * run does not depend on them (the answers stream does): the caller logs a failure and goes on.
   */
  markWaiting(executionId: string, report: WaitingReport, signal: AbortSignal): Promise<void>;
  markResumed(executionId: string, report: ResumedReport, signal: AbortSignal): Promise<void>;
}
