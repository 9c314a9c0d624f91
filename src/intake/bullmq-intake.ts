import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { describeRedisAddress, redisOptions } from '../domain/redis-address.js';
import { abortReason } from '../domain/errors.js';
import { readableExecutionId } from '../domain/job.js';
import type { Logger } from '../telemetry/types.js';

/**
 * The queue side of the worker (docs/queue-and-jobs.md). Runs are not idempotent — they act on real
 * business systems — so a job is never retried or re-run after a stall: `attempts` is the
 * producer's (1), `maxStalledCount` is 0, and an execution that ended is remembered in Redis
 * so a job delivered again for it is not run again.
 */

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
  handle(data: unknown, signal: AbortSignal): Promise<{ status: string; code?: string; maskedInput?: unknown }>;
  /** Called once for an execution whose worker died mid-run (its job stalled). */
  onLost(executionId: string, data: unknown): Promise<void>;
  /** How long a job lock lives without renewal; a dead worker's jobs are found after it. */
  lockDurationMs?: number;
  /** How often this worker looks for jobs of dead workers. */
  stalledIntervalMs?: number;
  /** How long "this execution ended" is remembered. */
  endedTtlMs?: number;
  /** Admission by capacity (docs/operations.md#admission-by-capacity); absent: WORKER_CONCURRENCY alone. */
  admission?: Admission;
  /** While a worker has no room, how often it looks again besides whenever an execution ends. */
  roomRecheckMs?: number;
}

/** Whether the worker has room for one more execution beside `active` running ones. */
export interface Admission {
  hasRoom(active: number): boolean;
}

const ROOM_RECHECK_MS = 1_000;

export interface Intake {
  start(): Promise<void>;
  /** Stops taking new jobs; running ones go on. */
  stopTaking(): Promise<void>;
  /** Resolves when no execution runs, or after `timeoutMs`; true when idle. */
  waitIdle(timeoutMs: number): Promise<boolean>;
  /** Aborts every running execution with `reason`. */
  abortAll(reason: Error): void;
  readonly activeCount: number;
  /** Redis answers PING. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

const STALLED_REASON = 'stalled more than allowable limit';
/** A Redis that does not answer PING within this is reported unready. */
const PING_TIMEOUT_MS = 2_000;

export function createBullmqIntake(options: IntakeOptions): Intake {
  const { logger } = options;
  const lockDurationMs = options.lockDurationMs ?? 30_000;
  const endedTtlMs = options.endedTtlMs ?? 30 * 24 * 3600 * 1000;
  const connection = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: false, lazyConnect: true }));
  connection.on('error', (error: Error) => logger.warn({ err: error }, 'redis connection error'));
  const endedKey = (id: string) => `${options.prefix}:${options.queueName}:ended:${id}`;
  const jobKey = (jobId: string) => `${options.prefix}:${options.queueName}:${jobId}`;
  /**
   * Replaces the job's input with its masked copy, or drops it (docs/secrets.md#secrets-outside-the-worker):
   * the execution id, which tells a job delivered again, stays.
   */
  const forgetSecrets = async (job: Job, maskedInput: unknown) => {
    const data: unknown = job.data;
    if (data === null || typeof data !== 'object' || !('inputPayload' in data)) return;
    const { inputPayload: _real, ...rest } = data as Record<string, unknown>;
    await job.updateData(maskedInput === undefined ? rest : { ...rest, inputPayload: maskedInput }).catch((error: Error) =>
      logger.warn({ jobId: job.id, err: error.message }, "could not remove the secrets from the ended job's data"),
    );
  };
  /**
   * Running executions by job id (the contract makes it the execution id; we do not rely on it).
   * `orphaned`: Redis lost the job itself (restarted without its data), so no other worker can
   * ever run it; the run goes on without a lock rather than being lost.
   */
  const running = new Map<string, { executionId: string; controller: AbortController; lastLockMs: number; orphaned?: boolean }>();
  const idleWaiters = new Set<() => void>();

  const process = async (job: Job, token?: string, jobSignal?: AbortSignal) => {
    const executionId = readableExecutionId(job.data) ?? `job:${job.id}`;
    if (await connection.exists(endedKey(executionId))) {
      logger.warn({ executionId, jobId: job.id }, 'job delivered again for an execution that already ended; not running it');
      await forgetSecrets(job, undefined);
      return { status: 'skipped', code: 'already_ended' };
    }
    if ([...running.values()].some((r) => r.executionId === executionId)) {
      logger.warn({ executionId, jobId: job.id }, 'execution already running in this worker; not running it twice');
      return { status: 'skipped', code: 'already_running' };
    }
    if (options.admission && !options.admission.hasRoom(running.size)) {
      // Fetched before the worker saw it had no room: hand it back, untouched, to the wait
      // list, where a worker with room (or this one, later) takes it.
      adjustTaking();
      logger.info({ executionId, active: running.size }, 'no room for another execution: handed back to the queue');
      await job.moveToWait(token);
      throw new WaitingError();
    }
    const controller = new AbortController();
    const signal = jobSignal ? AbortSignal.any([controller.signal, jobSignal]) : controller.signal;
    const jobId = String(job.id);
    running.set(jobId, { executionId, controller, lastLockMs: Date.now() });
    adjustTaking();
    try {
      const { maskedInput, ...summary } = await options.handle(job.data, signal);
      if (summary.status !== 'skipped') {
        await connection.set(endedKey(executionId), summary.status, 'PX', endedTtlMs).catch((error: Error) =>
          logger.warn({ executionId, err: error.message }, 'could not remember the execution as ended'),
        );
      }
      // The run is over (or will never be): the job keeps no secret for the days BullMQ keeps it.
      await forgetSecrets(job, maskedInput);
      return summary;
    } catch (error) {
      // Only malformed jobs without a readable id reach here: nothing to report to, never retry.
      throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
    } finally {
      running.delete(jobId);
      adjustTaking();
      if (running.size === 0) for (const wake of idleWaiters) wake();
    }
  };

  const worker = new Worker(options.queueName, process, {
    connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    autorun: false,
    maxStalledCount: 0,
    lockDuration: lockDurationMs,
    stalledInterval: options.stalledIntervalMs ?? 15_000,
  });

  worker.on('error', (error) => logger.warn({ err: error }, 'queue worker error'));

  /**
   * Fetches no more jobs than there is room for: without room, BullMQ's concurrency is lowered
   * to the executions running, so it takes none until one ends or memory frees up.
   */
  function adjustTaking() {
    if (!options.admission) return;
    const want = options.admission.hasRoom(running.size) ? options.concurrency : Math.max(1, running.size);
    if (worker.concurrency === want) return;
    logger.info({ active: running.size, concurrency: want }, want < options.concurrency ? 'no room for more executions: taking none until there is' : 'room again: taking executions');
    worker.concurrency = want;
  }
  const roomCheck = options.admission ? setInterval(adjustTaking, options.roomRecheckMs ?? ROOM_RECHECK_MS) : undefined;
  roomCheck?.unref();
  worker.on('locksRenewed', ({ jobIds }: { jobIds: string[] }) => {
    for (const id of jobIds) {
      const entry = running.get(id);
      if (entry) entry.lastLockMs = Date.now();
    }
  });
  worker.on('lockRenewalFailed', (jobIds: string[]) => {
    for (const id of jobIds) void lockRenewalFailed(id);
  });
  worker.on('failed', (job: Job | undefined, error: Error) => {
    if (!job || !error.message.includes(STALLED_REASON)) return;
    const executionId = readableExecutionId(job.data);
    if (!executionId) return;
    logger.error({ executionId, jobId: job.id }, 'execution lost: its worker stopped mid-run');
    void (async () => {
      // Ended, like any other: a job delivered again for it is not run again.
      await connection.set(endedKey(executionId), 'lost', 'PX', endedTtlMs).catch((err: Error) => logger.warn({ executionId, err: err.message }, 'could not remember the execution as ended'));
      await forgetSecrets(job, undefined);
      await options.onLost(executionId, job.data);
    })().catch((err: unknown) => logger.error({ executionId, err: String(err) }, 'could not report a lost execution'));
  });

  // Redis unreachable for longer than the lock: another worker may see the job as stalled,
  // so this one stops instead of racing it.
  const watchdog = setInterval(() => {
    const now = Date.now();
    for (const [id, entry] of running) if (!entry.orphaned && now - entry.lastLockMs > lockDurationMs) loseLock(id, `the job lock was not renewed for ${now - entry.lastLockMs} ms`);
  }, Math.max(1_000, Math.floor(lockDurationMs / 4)));
  watchdog.unref();

  /** The lock could not be renewed: stop the run, unless the job itself is gone from Redis. */
  async function lockRenewalFailed(jobId: string) {
    const entry = running.get(jobId);
    if (!entry || entry.orphaned || entry.controller.signal.aborted) return;
    // A Redis restarted without its data has no trace of the job: no worker can take it again,
    // so stopping would only lose the run. When unsure (Redis unreachable), stop it.
    const exists = await connection.exists(jobKey(jobId)).catch(() => 1);
    if (exists === 0) {
      entry.orphaned = true;
      logger.warn({ executionId: entry.executionId, jobId }, 'the queue no longer knows this job (Redis lost its data); finishing the run without a lock');
      return;
    }
    loseLock(jobId, 'the job lock was taken away');
  }

  function loseLock(jobId: string, why: string) {
    const entry = running.get(jobId);
    if (!entry || entry.controller.signal.aborted) return;
    logger.error({ executionId: entry.executionId, why }, 'job lock lost: stopping the run');
    entry.controller.abort(abortReason('worker_lost', `this worker lost the execution's job lock (${why})`));
  }

  let closing: Promise<void> | undefined;
  return {
    async start() {
      // The worker connects itself and keeps retrying while Redis is unreachable (logged, and
      // /readyz says so); it takes jobs as soon as Redis answers.
      logger.info({ redis: describeRedisAddress(options.redisUrl), queue: options.queueName }, 'connecting to the queue');
      void worker.run().catch((error: Error) => logger.error({ err: error }, 'queue worker stopped'));
      await worker.waitUntilReady();
    },
    async stopTaking() {
      await worker.pause(true);
    },
    waitIdle(timeoutMs) {
      if (running.size === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = (idle: boolean) => {
          clearTimeout(timer);
          idleWaiters.delete(wake);
          resolve(idle);
        };
        const wake = () => done(true);
        const timer = setTimeout(() => done(running.size === 0), timeoutMs);
        idleWaiters.add(wake);
      });
    },
    abortAll(reason) {
      for (const entry of running.values()) if (!entry.controller.signal.aborted) entry.controller.abort(reason);
    },
    get activeCount() {
      return running.size;
    },
    async ping() {
      // Commands wait in ioredis's offline queue while Redis is away: answer at once instead.
      if (connection.status !== 'ready') return false;
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), PING_TIMEOUT_MS)));
        return (await Promise.race([connection.ping(), timeout])) === 'PONG';
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      closing ??= (async () => {
        clearInterval(watchdog);
        clearInterval(roomCheck);
        await worker.close().catch((error: Error) => logger.warn({ err: error }, 'closing the queue worker failed'));
        connection.disconnect();
      })();
      return closing;
    },
  };
}
