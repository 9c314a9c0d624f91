import { createHash } from 'node:crypto';
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { createExecution, type CreateExecutionDeps } from './create-execution.js';
import { parseScheduleExpression } from './schedule-expression.js';
import type { VersionView } from './store.js';
import { defaultRunInput } from './default-input.js';
import { redisOptions } from '../domain/redis-address.js';
import { noTracing } from '../telemetry/tracing.js';
import { formatIssues } from '../contract/json.js';
import { scheduleTick, type ScheduleTick, type TickResult } from '../contract/schedule-tick.js';

/**
 * Scheduled versions (docs/api.md#triggers). Each workflow whose newest published version (the
 * one that runs by default, docs/api.md#versions) has `triggerType: "schedule"` has one BullMQ job scheduler, keyed by the workflow's
 * id, on a queue of its own beside the execution queue (`{EXECUTION_QUEUE}-schedules`: the
 * workers never read it). BullMQ makes one job per tick whatever the number of processes that
 * serve, and gives each job to one of them; that process creates the execution as
 * `POST /api/workflows/{id}/execute` does, marked `trigger: "schedule"`.
 *
 * Every change that can alter the default version (create, edit, publish, unpublish) calls
 * `sync`, which upserts or removes the scheduler; deleting the workflow calls `remove`. A tick
 * re-reads the workflow before it acts, so a tick already due when the version changed makes no
 * execution of a version that is no longer the scheduled one.
 */

export interface Schedules {
  /**
   * Makes the workflow's scheduler match its current version: upserted or removed. Never
   * throws: the change it follows is stored already, so a failure is logged, and put right by
   * the next change or the next start (`reconcile`).
   */
  sync(workflowId: string): Promise<void>;
  /** Removes the workflow's scheduler; never throws, like `sync`. */
  remove(workflowId: string): Promise<void>;
  /** When the workflow's scheduler fires next (ISO), or null when it has none. */
  nextRunAt(workflowId: string): Promise<string | null>;
  /** Brings every scheduler in line with the stored workflows (at start: a change may have been cut short). */
  reconcile(): Promise<void>;
  close(): Promise<void>;
}

export interface SchedulesOptions extends CreateExecutionDeps {
  redisUrl: string;
  queueName: string;
  queuePrefix: string;
}

export const schedulesQueueName = (executionQueue: string): string => `${executionQueue}-schedules`;

const TICK_JOB = 'tick';

export function createSchedules(opts: SchedulesOptions): Schedules {
  const { store, logger } = opts;
  const tracing = opts.tracing ?? noTracing;
  const name = schedulesQueueName(opts.queueName);
  const connection = redisOptions(opts.redisUrl) as ConnectionOptions;
  const queue = new Queue<ScheduleTick, TickResult>(name, { connection, prefix: opts.queuePrefix });
  queue.on('error', (error: Error) => logger.warn({ err: error }, 'schedules queue connection error'));

  /** The scheduler the default version asks for, or undefined for none. */
  function wanted(version: VersionView | undefined): { pattern: string; tz: string } | undefined {
    if (!version || version.status !== 'published' || version.trigger_type !== 'schedule' || version.schedule_expression === null) return undefined;
    // The floor was applied when the expression was saved, by whichever process saved it: a
    // process started without the test-only override must not undo another's schedule.
    const parsed = parseScheduleExpression(version.schedule_expression, { allowEverySecond: true });
    if (!parsed.ok) {
      logger.warn({ workflowId: version.workflow_uuid, reason: parsed.msg }, 'schedule not started');
      return undefined;
    }
    return parsed.schedule;
  }

  async function sync(workflowId: string): Promise<void> {
    const version = await store.defaultVersion(workflowId);
    const schedule = wanted(version);
    if (!version || !schedule) {
      if (await queue.removeJobScheduler(workflowId)) logger.info({ workflowId }, 'schedule removed');
      return;
    }
    const data: ScheduleTick = { workflowId, workflowVersionId: version.workflow_version_uuid };
    await queue.upsertJobScheduler(workflowId, schedule, {
      name: TICK_JOB,
      data,
      // Kept a while so that what each tick did can be read back, bounded like the execution jobs.
      opts: { removeOnComplete: { age: 86_400, count: 1_000 }, removeOnFail: { age: 7 * 86_400, count: 1_000 } },
    });
    logger.info({ workflowId, versionId: version.workflow_version_uuid, pattern: schedule.pattern, tz: schedule.tz }, 'schedule set');
  }

  /** A tick starts the trace of the execution it makes (docs/operations.md#traces). */
  async function tick(job: Job<ScheduleTick, TickResult>): Promise<TickResult> {
    const data = readTick(job.data);
    const { workflowId, workflowVersionId } = data;
    const span = tracing.startSpan('schedule tick', {
      kind: 'consumer',
      parent: null,
      attributes: { 'workflow.id': workflowId, 'workflow_version.id': workflowVersionId, 'messaging.system': 'bullmq', 'messaging.destination.name': name, 'messaging.message.id': job.id },
    });
    try {
      const result = await tracing.withSpan(span, () => tickIn(job, data, span.traceparent));
      span.setAttributes('executionId' in result ? { 'execution.id': result.executionId } : { 'schedule.skipped': result.skipped });
      return result;
    } catch (error) {
      span.fail(error instanceof Error ? error.name : 'error', error instanceof Error ? error.message : String(error));
      throw error;
    } finally {
      span.end();
    }
  }

  async function tickIn(job: Job<ScheduleTick, TickResult>, data: ScheduleTick, traceparent: string | undefined): Promise<TickResult> {
    const { workflowId, workflowVersionId } = data;
    const [workflow, version] = await Promise.all([store.getWorkflow(workflowId), store.defaultVersion(workflowId)]);
    if (!workflow || !version || version.workflow_version_uuid !== workflowVersionId || !wanted(version)) {
      // A tick of a scheduler left behind (a change whose sync was cut short): put it right.
      await sync(workflowId);
      return { skipped: 'the workflow no longer has this schedule' };
    }
    // One id per tick: a tick processed again (its process died half-way) finds its execution.
    const executionId = tickExecutionId(opts.queuePrefix, name, job.id ?? `${workflowId}:${job.timestamp}`);
    if (await store.getExecution(executionId)) return { executionId };
    const input = defaultRunInput(version, opts.inputKeys);
    const execution = await createExecution(opts, { workflow, version, inputPayload: input.payload, secretPaths: input.secretPaths, trigger: 'schedule', executionId, ...(traceparent ? { traceparent } : {}) });
    return { executionId: execution.execution_uuid };
  }

  const worker = new Worker<ScheduleTick, TickResult>(name, tick, { connection, prefix: opts.queuePrefix, concurrency: 4 });
  worker.on('error', (error: Error) => logger.warn({ err: error }, 'schedules worker error'));
  worker.on('failed', (job, error) => logger.error({ workflowId: scheduleTick.safeParse(job?.data).data?.workflowId, err: error.message }, 'scheduled execution not created'));

  let closing: Promise<void> | undefined;
  return {
    async sync(workflowId) {
      await sync(workflowId).catch((error: unknown) => logger.error({ workflowId, err: String(error) }, 'could not set the schedule'));
    },

    async remove(workflowId) {
      // A scheduler left behind finds no workflow at its next tick and removes itself.
      await queue
        .removeJobScheduler(workflowId)
        .then((removed) => removed && logger.info({ workflowId }, 'schedule removed'))
        .catch((error: unknown) => logger.error({ workflowId, err: String(error) }, 'could not remove the schedule'));
    },

    async nextRunAt(workflowId) {
      const scheduler = await queue.getJobScheduler(workflowId);
      return typeof scheduler?.next === 'number' ? new Date(scheduler.next).toISOString() : null;
    },

    async reconcile() {
      const known = new Set<string>();
      for (let offset = 0; ; offset += 200) {
        const page = await store.listWorkflows(200, offset);
        for (const w of page.items) known.add(w.workflow_uuid);
        if (page.items.length < 200) break;
      }
      for (const scheduler of await queue.getJobSchedulers()) {
        if (!known.has(scheduler.key)) await queue.removeJobScheduler(scheduler.key);
      }
      for (const workflowId of known) {
        const version = await store.defaultVersion(workflowId);
        const schedule = wanted(version);
        const existing = await queue.getJobScheduler(workflowId);
        const same =
          existing !== undefined &&
          schedule !== undefined &&
          existing.pattern === schedule.pattern &&
          (existing.tz ?? 'UTC') === schedule.tz &&
          scheduleTick.safeParse(existing.template?.data).data?.workflowVersionId === version?.workflow_version_uuid;
        // An unchanged scheduler is left alone, so processes starting together do not churn it.
        if (!same && (schedule !== undefined || existing !== undefined)) await sync(workflowId);
      }
    },

    close() {
      closing ??= Promise.allSettled([worker.close(), queue.close()]).then(() => undefined);
      return closing;
    },
  };
}

/** A tick's data as its job holds it (Redis: any process may have written it); a tick of another shape fails, saying why. */
export function readTick(data: unknown): ScheduleTick {
  const read = scheduleTick.safeParse(data);
  if (!read.success) throw new Error(`not a schedule tick: ${formatIssues(read.error.issues)}`);
  return read.data;
}

/** A uuid-shaped id derived from the tick's job id (a hash; RFC 9562 version 8 layout). */
function tickExecutionId(prefix: string, queue: string, jobId: string): string {
  const hex = createHash('sha256').update(`${prefix}\0${queue}\0${jobId}`).digest('hex');
  const variant = ((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
