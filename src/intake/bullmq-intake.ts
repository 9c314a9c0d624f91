import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { describeRedisAddress, redisOptions } from '../domain/redis-address.js';
import { readableExecutionId } from '../domain/job.js';
import { createAdmissionGate } from './admission-gate.js';
import { createEndedExecutions } from './ended-executions.js';
import { forgetJobSecrets } from './job-secrets.js';
import { createLockWatchdog } from './lock-watchdog.js';
import { createLostJobReporter, isLostJob } from './lost-jobs.js';
import { pingRedis } from './redis-ping.js';
import { createRunningJobs } from './running-jobs.js';
import type { Intake, IntakeOptions, JobOutcome } from './types.js';

/**
 * The BullMQ worker, wired to the intake's parts (docs/queue-and-jobs.md). Runs are not
 * idempotent — they act on real business systems — so a job is never retried or re-run after a
 * stall: `attempts` is the producer's (1), `maxStalledCount` is 0, and an execution that ended is
 * remembered in Redis (ended-executions.ts) so a job delivered again for it is not run again.
 * The other parts: the lock watchdog, admission, the job's secrets, lost jobs, the ping.
 */

const ROOM_RECHECK_MS = 1_000;

export function createBullmqIntake(options: IntakeOptions): Intake {
  const { logger } = options;
  const lockDurationMs = options.lockDurationMs ?? 30_000;
  const connection = new Redis(redisOptions(options.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: false, lazyConnect: true }));
  connection.on('error', (error: Error) => logger.warn({ err: error }, 'redis connection error'));
  const jobKey = (jobId: string) => `${options.prefix}:${options.queueName}:${jobId}`;

  const running = createRunningJobs();
  const ended = createEndedExecutions({ connection, prefix: options.prefix, queueName: options.queueName, ttlMs: options.endedTtlMs ?? 30 * 24 * 3600 * 1000, logger });
  const watchdog = createLockWatchdog({
    lockDurationMs,
    logger,
    // Unreachable Redis cannot say: the job is taken to exist, and the run stops.
    jobExists: (jobId) => connection.exists(jobKey(jobId)).then((n) => n > 0, () => true),
  });
  const reportLost = createLostJobReporter({ ended, logger, onLost: options.onLost });

  const process = async (job: Job, token?: string, jobSignal?: AbortSignal): Promise<Omit<JobOutcome, 'maskedInput'>> => {
    const executionId = readableExecutionId(job.data) ?? `job:${job.id}`;
    if (await ended.has(executionId)) {
      logger.warn({ executionId, jobId: job.id }, 'job delivered again for an execution that already ended; not running it');
      await forgetJobSecrets(job, undefined, logger);
      return { status: 'skipped', code: 'already_ended' };
    }
    if (running.runsExecution(executionId)) {
      logger.warn({ executionId, jobId: job.id }, 'execution already running in this worker; not running it twice');
      return { status: 'skipped', code: 'already_running' };
    }
    if (!gate.hasRoom()) {
      // Fetched before the worker saw it had no room: hand it back, untouched, to the wait
      // list, where a worker with room (or this one, later) takes it.
      gate.adjust();
      logger.info({ executionId, active: running.size }, 'no room for another execution: handed back to the queue');
      await job.moveToWait(token);
      throw new WaitingError();
    }
    const jobId = String(job.id);
    const { job: runningJob, signal } = running.add(jobId, executionId, jobSignal);
    watchdog.track(jobId, runningJob);
    gate.adjust();
    try {
      const { maskedInput, ...summary } = await options.handle(job.data, signal);
      if (summary.status !== 'skipped') await ended.remember(executionId, summary.status);
      // The run is over (or will never be): the job keeps no secret for the days BullMQ keeps it.
      await forgetJobSecrets(job, maskedInput, logger);
      return summary;
    } catch (error) {
      // Only malformed jobs without a readable id reach here: nothing to report to, never retry.
      throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
    } finally {
      watchdog.untrack(jobId);
      running.delete(jobId);
      gate.adjust();
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
  const gate = createAdmissionGate({ admission: options.admission, concurrency: options.concurrency, dial: worker, active: () => running.size, logger, recheckMs: options.roomRecheckMs ?? ROOM_RECHECK_MS });

  worker.on('error', (error) => logger.warn({ err: error }, 'queue worker error'));
  worker.on('locksRenewed', ({ jobIds }: { jobIds: string[] }) => watchdog.renewed(jobIds));
  worker.on('lockRenewalFailed', (jobIds: string[]) => {
    for (const id of jobIds) void watchdog.renewalFailed(id);
  });
  worker.on('failed', (job: Job | undefined) => {
    if (job && isLostJob(job)) void reportLost(job);
  });
  watchdog.start();

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
    waitIdle: (signal) => running.whenIdle(signal),
    abortAll: (reason) => running.abortAll(reason),
    get activeCount() {
      return running.size;
    },
    ping: (signal) => pingRedis(connection, signal),
    close() {
      closing ??= (async () => {
        watchdog.close();
        gate.close();
        await worker.close().catch((error: Error) => logger.warn({ err: error }, 'closing the queue worker failed'));
        connection.disconnect();
      })();
      return closing;
    },
  };
}
