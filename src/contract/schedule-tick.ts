/**
 * A scheduled version's tick (docs/api.md#triggers): the data of the job its BullMQ job scheduler
 * makes on the `{EXECUTION_QUEUE}-schedules` queue, written by whichever local service process set
 * the schedule and read by whichever takes the tick, and what the tick leaves on its job.
 */
import { z } from 'zod';

export const scheduleTick = z.object({
  workflowId: z.string().min(1),
  /** The version scheduled when the scheduler was set: a tick of another one makes no execution. */
  workflowVersionId: z.string().min(1),
});
export type ScheduleTick = z.infer<typeof scheduleTick>;

/** A tick's return value, kept on its job for a day: the execution it made, or why it made none. */
export const tickResult = z.union([z.object({ executionId: z.string() }), z.object({ skipped: z.string() })]);
export type TickResult = z.infer<typeof tickResult>;
