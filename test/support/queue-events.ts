import { Job, QueueEvents, type Queue } from 'bullmq';
import { Redis } from 'ioredis';

/**
 * A QueueEvents that reads the queue's event stream from the moment it is opened. BullMQ's
 * default start, `$`, is resolved by its first XREAD, which comes after `waitUntilReady` has
 * resolved: an event written in between (a job that fails a few milliseconds after it was
 * added) would never be delivered. The newest entry's id, read here first, fixes the start.
 * Events of earlier jobs with the same id (a re-delivered job) are not replayed.
 */
export async function openQueueEvents(queue: Queue, redisUrl: string): Promise<QueueEvents> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  let newest: [id: string, fields: string[]] | undefined;
  try {
    [newest] = await redis.xrevrange(queue.keys.events!, '+', '-', 'COUNT', 1);
  } finally {
    redis.disconnect();
  }
  const events = new QueueEvents(queue.name, { connection: { url: redisUrl }, prefix: queue.opts.prefix, lastEventId: newest?.[0] ?? '0' });
  await events.waitUntilReady();
  return events;
}

/** Waits for a job to finish through BullMQ's own events: its return value, or its failure. */
export async function waitForJob(queue: Queue, jobId: string, redisUrl: string): Promise<unknown> {
  const events = await openQueueEvents(queue, redisUrl);
  try {
    const job = await Job.fromId(queue, jobId);
    if (!job) throw new Error(`no job ${jobId}`);
    return await job.waitUntilFinished(events);
  } finally {
    await events.close();
  }
}
