import type { Logger } from '../telemetry/types.js';

/**
 * The queue side of the worker (docs/queue-and-jobs.md): takes jobs, hands each with its
 * `AbortSignal` to the runner, and tells the daemon when it is idle.
 */
export interface Intake {
  start(): Promise<void>;
  /** Stops taking new jobs; running ones go on. */
  stopTaking(): Promise<void>;
  /** Resolves true once no execution runs; false when `signal` fires first. */
  waitIdle(signal: AbortSignal): Promise<boolean>;
  /** Aborts every running execution with `reason`. */
  abortAll(reason: Error): void;
  readonly activeCount: number;
  /** Redis answers PING (within 2 s, or before `signal` fires). */
  ping(signal: AbortSignal): Promise<boolean>;
  close(): Promise<void>;
}

/** What one execution's run tells the intake when it ends. */
export interface JobOutcome {
  status: string;
  code?: string;
  /** The input with its secrets as placeholders; it replaces the job's input (undefined: dropped). */
  maskedInput?: unknown;
}

export interface IntakeOptions {
  redisUrl: string;
  queueName: string;
  prefix: string;
  concurrency: number;
  logger: Logger;
  /**
   * Runs one execution; resolves with a short summary stored as the job's return value, and the
   * input with its secrets as placeholders (`maskedInput`), which replaces the job's input once
   * the run has ended (undefined: the input is dropped from the job).
   */
  handle(data: unknown, signal: AbortSignal): Promise<JobOutcome>;
  /** Called once for an execution whose worker died mid-run (its job stalled). */
  onLost(executionId: string, data: unknown): Promise<void>;
  /** How long a job lock lives without renewal; a dead worker's jobs are found after it. Default 30 s. */
  lockDurationMs?: number;
  /** How often this worker looks for jobs of dead workers. Default 15 s. */
  stalledIntervalMs?: number;
  /** How long "this execution ended" is remembered. Default 30 days. */
  endedTtlMs?: number;
  /** Admission by capacity (docs/operations.md#admission-by-capacity); absent: WORKER_CONCURRENCY alone. */
  admission?: Admission;
  /** While a worker has no room, how often it looks again besides whenever an execution ends. Default 1 s. */
  roomRecheckMs?: number;
}

/** Whether the worker has room for one more execution beside `active` running ones. */
export interface Admission {
  hasRoom(active: number): boolean;
}
