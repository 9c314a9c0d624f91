/**
 * The control-plane port: the operator's API as the worker sees it (docs/api.md). The shapes of
 * what it reads (the service description's snake_case records) and of the reports it sends
 * (camelCase bodies) are declared in src/contract/.
 */
import type { ExecutionReading } from '../contract/executions.js';
import type { VersionReading } from '../contract/workflows.js';
import type { CompletedReport, FailedReport, ResumedReport, WaitingReport } from '../contract/reports.js';

export type StartedResult = { ok: true } | { ok: false; status: number; reason: string };

export interface ControlPlane {
  /** An execution as `GET /api/executions/{id}` returns it (the fields the worker reads). */
  getExecution(executionId: string, signal: AbortSignal): Promise<ExecutionReading>;
  /** The versions `GET /api/workflows/{workflow_uuid}/versions` lists. */
  listVersions(workflowId: string, signal: AbortSignal): Promise<VersionReading[]>;
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
