/**
 * A typed event stream (graphile-worker's `WorkerEvents`, per execution): emitters say what
 * happened, subscribers hear it, and neither knows the other. It knows no event of its own: the
 * map of names and fields is its user's (the runner's is `execution/events.ts`), so this file, like
 * the rest of `telemetry/`, depends on nothing above it.
 *
 * Two kinds of events share one stream and one `on`:
 * - `Lines` are what happened in the run, told to whoever reads it: each becomes one line
 *   (`logs.jsonl`, the live view) for the subscribers of `onLine`;
 * - `Inner` are for the worker's own subscribers (a moment on the video's timeline, what the run
 *   cache keeps of an action): never a line.
 * They are emitted by different verbs, `emit` and `notify`, so an inner event cannot become a
 * line by mistake: it does not compile.
 *
 * Every event is redacted once, here, before anyone hears it, and dated on the run's timeline
 * (`t`, from `setOrigin`). Subscribers run in the order they subscribed, synchronously: one that
 * throws is reported to `onError` and the others still hear the event.
 */

import type { LogLine } from '../contract/log-line.js';

/** Names and fields of events: each event's fields are an object. */
export type EventMap = { [name: string]: object };

/** What a subscriber hears besides the fields: which event, and when it happened (epoch ms). */
export interface EventMeta<Name extends string = string> {
  type: Name;
  atMs: number;
}

/** Where events are told. `atMs` (epoch ms) dates an event that began before it is told (an action told once it finished). */
export interface EventSink<Lines extends EventMap, Inner extends EventMap = Record<never, object>> {
  /** Tells an event that is a line; its fields must be JSON values (they are written as they are). */
  emit<K extends keyof Lines & string>(type: K, fields: Lines[K], atMs?: number): void;
  /** Tells an inner event: its subscribers hear it, no line is written. */
  notify<K extends keyof Inner & string>(type: K, fields: Inner[K], atMs?: number): void;
  /** Whether anything hears `type` now: an emitter may skip work only a subscriber would use. */
  hasSubscribers(type: (keyof Lines | keyof Inner) & string): boolean;
}

/** Where events are heard. Each subscription returns its unsubscribe. */
export interface EventSource<Lines extends EventMap, Inner extends EventMap = Record<never, object>> {
  /** Hears every event of one type (line or inner), with its typed fields. */
  on<K extends keyof (Lines & Inner) & string>(type: K, handler: (fields: (Lines & Inner)[K], meta: EventMeta<K>) => void): () => void;
  /** Hears every line (the event log, the live view). */
  onLine(handler: (line: LogLine & { type: keyof Lines & string }) => void): () => void;
}

export interface EventStream<Lines extends EventMap, Inner extends EventMap = Record<never, object>> extends EventSink<Lines, Inner>, EventSource<Lines, Inner> {
  /**
   * Moves the origin of `t` to the run's start (the `started` call), which is also the start
   * of the video: an event at `t` ms is seen at second t/1000 of video.mp4.
   */
  setOrigin(epochMs: number): void;
}

export interface EventStreamOptions {
  executionId: string;
  /** Hides secrets in a value (as the secrets are when the event comes). */
  redact: <T>(value: T) => T;
  now?: () => number;
  onError?: (error: unknown, type: string) => void;
}

type Delivery = { fields: object; meta: EventMeta };

export function createEventStream<Lines extends EventMap, Inner extends EventMap = Record<never, object>>(options: EventStreamOptions): EventStream<Lines, Inner> {
  const now = options.now ?? Date.now;
  let origin = now();
  const byType = new Map<string, Set<(delivery: Delivery) => void>>();
  const lines = new Set<(line: LogLine) => void>();

  const subscribe = <H>(set: Set<H>, handler: H): (() => void) => {
    // A wrapper of its own, so one handler subscribed twice is two subscriptions.
    const own = ((...args: unknown[]) => (handler as (...a: unknown[]) => void)(...args)) as H;
    set.add(own);
    return () => set.delete(own);
  };
  const deliver = <T>(handlers: Iterable<(value: T) => void> | undefined, value: T, type: string): void => {
    if (!handlers) return;
    for (const handler of [...handlers]) {
      try {
        handler(value);
      } catch (error) {
        options.onError?.(error, type);
      }
    }
  };
  const heard = (type: string): boolean => (byType.get(type)?.size ?? 0) > 0;

  return {
    emit(type, fields, atMs) {
      const at = atMs ?? now();
      const safe = options.redact(fields);
      deliver(byType.get(type), { fields: safe, meta: { type, atMs: at } }, type);
      if (lines.size === 0) return;
      const line: LogLine = { ts: new Date(at).toISOString(), t: at - origin, type, executionId: options.executionId, ...safe };
      deliver(lines, line, type);
    },
    notify(type, fields, atMs) {
      // Nobody hears it: not even the redaction is paid for.
      if (!heard(type)) return;
      deliver(byType.get(type), { fields: options.redact(fields), meta: { type, atMs: atMs ?? now() } }, type);
    },
    hasSubscribers: heard,
    on(type, handler) {
      let set = byType.get(type);
      if (!set) byType.set(type, (set = new Set()));
      return subscribe(set, ({ fields, meta }: Delivery) => handler(fields as never, meta as never));
    },
    onLine: (handler) => subscribe(lines, handler as (line: LogLine) => void),
    setOrigin(epochMs) {
      origin = epochMs;
    },
  };
}
