/**
 * The live view's wire between the two programs (docs/operations.md#the-live-view): the worker publishes an execution's
 * frames and events on Redis only while the local service says someone watches it. Shared by
 * the worker's relay (src/live/) and the local service's hub (src/local-service/): names and
 * message shapes live here, once.
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

export interface WatchNotice {
  executionId: string;
  /** A new viewer: the worker sends the events so far and the newest frame again. */
  join: boolean;
}

/** A logs.jsonl line (redacted, as written) with its sequence number in the execution. */
export interface LiveEvent {
  seq: number;
  line: Record<string, unknown>;
}

/**
 * On the events channel: new lines (one as it happens, or all so far after a join, so a viewer
 * may get a line twice and keeps one per `seq`), or the end of the run.
 */
export type LiveMessage = { kind: 'events'; events: LiveEvent[] } | { kind: 'end' };

export function parseWatchNotice(text: string): WatchNotice | undefined {
  try {
    const value = JSON.parse(text) as Partial<WatchNotice>;
    return typeof value.executionId === 'string' ? { executionId: value.executionId, join: value.join === true } : undefined;
  } catch {
    return undefined;
  }
}
