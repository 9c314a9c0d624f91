/**
 * The live view's messages between the two programs (docs/operations.md#the-live-view), on Redis
 * pub/sub: the local service's notice that someone watches an execution, and the worker's
 * messages on an execution's events channel. Frames travel as raw JPEG bytes, without a shape.
 */
import { z } from 'zod';
import { logLine } from './log-line.js';

/** The local service → every worker: "someone watches this execution". */
export const watchNotice = z.object({
  executionId: z.string(),
  /** A new viewer: the worker sends the events so far and the newest frame again. Anything but `true` is a heartbeat. */
  join: z.boolean().catch(false),
});
export type WatchNotice = z.infer<typeof watchNotice>;

/** A logs.jsonl line (redacted, as written) with its sequence number in the execution. */
export const liveEvent = z.object({ seq: z.number().int().min(0), line: logLine });
export type LiveEvent = z.infer<typeof liveEvent>;

/**
 * On the events channel: new lines (one as it happens, or all so far after a join, so a viewer
 * may get a line twice and keeps one per `seq`), or the end of the run.
 */
export const liveMessage = z.discriminatedUnion('kind', [z.object({ kind: z.literal('events'), events: z.array(liveEvent) }), z.object({ kind: z.literal('end') })]);
export type LiveMessage = z.infer<typeof liveMessage>;
