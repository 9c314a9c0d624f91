/**
 * The live view's wire between the two programs (docs/operations.md#the-live-view): the worker
 * publishes an execution's frames and events on Redis only while the local service says someone
 * watches it. Shared by the worker's relay (src/live/) and the local service's hub
 * (src/local-service/): the channels and their timing live here, once; the messages' shapes are
 * contract/live.ts's.
 *
 *   {prefix}:{queue}:live:watch          the local service → every worker: "someone watches X",
 *                                        on each new viewer (`join`) and every LIVE_HEARTBEAT_MS
 *                                        while viewers remain
 *   {prefix}:{queue}:live:{id}:frames    the worker → viewers: one JPEG per message (raw bytes)
 *   {prefix}:{queue}:live:{id}:events    the worker → viewers: LiveMessage JSON
 *
 * A worker that hears no notice for LIVE_WATCH_TTL_MS, or whose publish reaches no subscriber,
 * stops publishing: nothing is sent for executions nobody watches.
 */

import type { z } from 'zod';
import { liveMessage, watchNotice, type LiveMessage, type WatchNotice } from '../contract/live.js';

/** How often the local service repeats its notice while an execution has viewers. */
export const LIVE_HEARTBEAT_MS = 2_000;
/** Without a notice for this long, the worker takes it that nobody watches any more. */
export const LIVE_WATCH_TTL_MS = 3 * LIVE_HEARTBEAT_MS;

export interface LiveChannelNames {
  watch: string;
  frames(executionId: string): string;
  events(executionId: string): string;
}

/** Channel names under the queue's own prefix, so two queues on one Redis never mix. */
export function liveChannelNames(queuePrefix: string, queueName: string): LiveChannelNames {
  const base = `${queuePrefix}:${queueName}:live`;
  return {
    watch: `${base}:watch`,
    frames: (id) => `${base}:${id}:frames`,
    events: (id) => `${base}:${id}:events`,
  };
}

/** Reads a watch notice; undefined when it is not one. */
export function parseWatchNotice(text: string): WatchNotice | undefined {
  return readJson(watchNotice, text);
}

/** Reads a message of an execution's events channel; undefined when it is not one. */
export function parseLiveMessage(text: string): LiveMessage | undefined {
  return readJson(liveMessage, text);
}

function readJson<S extends z.ZodType>(schema: S, text: string): z.output<S> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const read = schema.safeParse(value);
  return read.success ? read.data : undefined;
}
