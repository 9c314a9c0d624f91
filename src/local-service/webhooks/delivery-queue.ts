import { createHash } from 'node:crypto';
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { ExecutionRow } from '../../contract/executions.js';
import type { WebhookEvent, WebhookRow } from '../../contract/webhooks.js';
import { redisOptions } from '../../domain/redis-address.js';
import type { Logger } from '../../telemetry/types.js';
import { sendOnce, type SendOptions } from './send.js';
import type { WebhookStore } from './webhook-store.js';

/**
 * The deliveries' queue (docs/api.md#webhooks): a BullMQ queue of its own, `{EXECUTION_QUEUE}-webhooks`,
 * one job per event and webhook, so what is owed survives a restart of `serve` (a job waiting for
 * its next attempt is a delayed job in Redis). A job is delivered at least once: it is queued
 * before the report that caused it is answered (a report that could not queue it answers 500,
 * and the worker's retry of the report queues it then), and retried on every failed attempt after
 * the pauses of `retryScheduleMs` (by default the Standard Webhooks schedule: 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h, 10 h — 27 h 35 min in all). The event's id is made from what the event is (the
 * execution, the event, the time the report gave), so a report repeated gives the same id, which
 * BullMQ's job id and the delivery record take once: the same event is never queued twice.
 */

/** Standard Webhooks' retry schedule: the pause before each retry. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_ANSWER_BYTES = 65_536;

export const webhookQueueName = (executionQueue: string): string => `${executionQueue}-webhooks`;

interface DeliveryJob {
  webhookId: string;
  deliveryId: string;
}

export interface DeliveryQueueOptions {
  redisUrl: string;
  queueName: string;
  queuePrefix: string;
  store: WebhookStore;
  logger: Logger;
  retryScheduleMs?: readonly number[];
  send: Partial<SendOptions> & Pick<SendOptions, 'policy'>;
}

/** The time an execution's report gave for the event: what makes the event one. */
function eventTime(type: WebhookEvent, execution: ExecutionRow): string {
  const at = type === 'execution.started' ? execution.started_at : type === 'execution.waiting' ? (execution.waiting?.waitingAt ?? null) : type === 'execution.completed' ? execution.completed_at : execution.failed_at;
  return at ?? execution.updated_at;
}

/** `msg_` + a digest of the execution, the event and its time: the same event, the same id. */
export function eventId(type: WebhookEvent, execution: ExecutionRow): string {
  return `msg_${createHash('sha256').update(`${execution.execution_uuid}\0${type}\0${eventTime(type, execution)}`).digest('base64url').slice(0, 32)}`;
}

export function createDeliveryQueue(opts: DeliveryQueueOptions) {
  const { store, logger } = opts;
  const schedule = opts.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS;
  const sendOptions: SendOptions = { timeoutMs: DELIVERY_TIMEOUT_MS, maxAnswerBytes: MAX_ANSWER_BYTES, ...opts.send };
  const name = webhookQueueName(opts.queueName);
  const connection = redisOptions(opts.redisUrl) as ConnectionOptions;
  const queue = new Queue<DeliveryJob>(name, { connection, prefix: opts.queuePrefix });
  queue.on('error', (error: Error) => logger.warn({ err: error }, 'webhook queue connection error'));
  const jobOptions = {
    attempts: schedule.length + 1,
    backoff: { type: 'webhook' },
    // Kept a while after, so that a repeated report finds the job id taken.
    removeOnComplete: { age: 7 * 86_400, count: 10_000 },
    removeOnFail: { age: 30 * 86_400, count: 10_000 },
  };

  async function attempt(job: Job<DeliveryJob>): Promise<void> {
    const { webhookId, deliveryId } = job.data;
    const [hook, secret, body] = await Promise.all([store.get(webhookId), store.secret(webhookId), store.deliveryBody(webhookId, deliveryId)]);
    // Deleted since: nothing is owed to it any more.
    if (!hook || body === undefined) return;
    if (!secret.ok) {
      logger.error({ webhookId, deliveryId, reason: secret.reason }, 'webhook delivery not signed');
      throw new Error(secret.reason);
    }
    const result = await sendOnce(hook.url, secret.secret, { id: deliveryId, body }, sendOptions);
    const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const state = result.error === null ? 'delivered' : last ? 'failed' : 'pending';
    await store.recordAttempt(webhookId, deliveryId, result, state);
    logger.info({ webhookId, deliveryId, status: result.status, latencyMs: result.latencyMs, error: result.error }, result.error === null ? 'webhook delivered' : 'webhook attempt failed');
    if (result.error !== null) throw new Error(result.error);
  }

  const worker = new Worker<DeliveryJob>(name, attempt, {
    connection,
    prefix: opts.queuePrefix,
    concurrency: 8,
    settings: { backoffStrategy: (attemptsMade: number) => schedule[Math.min(attemptsMade, schedule.length) - 1] ?? schedule.at(-1) ?? 0 },
  });
  worker.on('error', (error: Error) => logger.warn({ err: error }, 'webhook worker error'));

  /** Queues one job; BullMQ takes a job id once, so the same id queued again is a no-op. */
  const add = (data: DeliveryJob, jobId: string) => queue.add('deliver', data, { ...jobOptions, jobId });

  let closing: Promise<void> | undefined;
  return {
    /** Queues `type` for `execution` to every webhook that wants it; throws when one could not be queued. */
    async publish(type: WebhookEvent, execution: ExecutionRow, hooks: readonly WebhookRow[]): Promise<void> {
      const wanting = hooks.filter((h) => h.events.includes(type) && (h.workflowId === null || h.workflowId === execution.workflow_uuid));
      if (wanting.length === 0) return;
      const id = eventId(type, execution);
      const body = JSON.stringify({ type, id, timestamp: eventTime(type, execution), data: { execution } });
      for (const hook of wanting) {
        await store.addDelivery(hook.id, { id, type, executionId: execution.execution_uuid, created_at: new Date().toISOString(), body });
        await add({ webhookId: hook.id, deliveryId: id }, `${hook.id}.${id}`);
      }
    },

    /**
     * Sends a delivery again (its id unchanged), with a full round of attempts; false, queueing
     * nothing, while a round is still pending (the state is claimed in one script: two calls at
     * once start one round).
     */
    async again(webhookId: string, deliveryId: string): Promise<boolean> {
      if (!(await store.startRound(webhookId, deliveryId))) return false;
      await add({ webhookId, deliveryId }, `${webhookId}.${deliveryId}.again.${Date.now()}`);
      return true;
    },

    close(): Promise<void> {
      closing ??= Promise.allSettled([worker.close(), queue.close()]).then((results) => {
        for (const r of results) if (r.status === 'rejected') logger.warn({ err: String(r.reason) }, 'webhook queue cleanup step failed');
      });
      return closing;
    },
  };
}

export type DeliveryQueue = ReturnType<typeof createDeliveryQueue>;
