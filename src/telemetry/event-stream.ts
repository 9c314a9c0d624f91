import type { EventSink } from './types.js';
import type { EventLine, ExecutionEvent, ExecutionEventName, ExecutionEvents, TimelineMark } from './execution-events.js';

/**
 * The typed event stream of one execution (graphile-worker's `WorkerEvents`, per execution): the
 * runner, the agent and the replay emit; the event log, the metrics, the live view, the step
 * screenshots and the video subscribe. A new observer subscribes here and never touches the runner.
 *
 * Every event is redacted once, here, before anyone sees it, and dated on the video's timeline
 * (`t`, from `setOrigin`). Subscribers run in the order they subscribed, synchronously: one that
 * throws is reported to `onError` and the others still hear the event.
 */
export interface ExecutionEventStream extends EventSink {
  /** Hears every event of one type, with its typed fields. Returns the unsubscribe. */
  on<K extends ExecutionEventName>(type: K, handler: (fields: ExecutionEvents[K], event: ExecutionEvent<K>) => void): () => void;
  /** Hears every event (the event log, the metrics, the live view). Returns the unsubscribe. */
  onAny(handler: (event: ExecutionEvent) => void): () => void;
  /** Puts a moment on the video's timeline (its label redacted). */
  mark(mark: TimelineMark): void;
  /** Hears every timeline mark (the video's steps track and click markers). Returns the unsubscribe. */
  onMark(handler: (mark: TimelineMark) => void): () => void;
  /**
   * Moves the origin of `t` to the run's start (the `started` call), which is also the start
   * of the video: an event at `t` ms is seen at second t/1000 of video.mp4.
   */
  setOrigin(epochMs: number): void;
}

export function createEventStream(options: {
  executionId: string;
  /** Hides secrets in a value (the execution's vault, as it is when the event comes). */
  redact: <T>(value: T) => T;
  now?: () => number;
  onError?: (error: unknown, type: string) => void;
}): ExecutionEventStream {
  const now = options.now ?? Date.now;
  let origin = now();
  const byType = new Map<ExecutionEventName, Set<(event: ExecutionEvent) => void>>();
  const any = new Set<(event: ExecutionEvent) => void>();
  const marks = new Set<(mark: TimelineMark) => void>();

  const subscribe = <H>(set: Set<H>, handler: H): (() => void) => {
    // A wrapper of its own, so one handler subscribed twice is two subscriptions.
    const own = ((...args: unknown[]) => (handler as (...a: unknown[]) => void)(...args)) as H;
    set.add(own);
    return () => set.delete(own);
  };
  const deliver = <T>(handlers: Iterable<(value: T) => void>, value: T, type: string): void => {
    for (const handler of [...handlers]) {
      try {
        handler(value);
      } catch (error) {
        options.onError?.(error, type);
      }
    }
  };

  return {
    emit(type, fields, atMs) {
      const at = atMs ?? now();
      const safe = options.redact(fields);
      const line: EventLine = { ts: new Date(at).toISOString(), t: at - origin, type, executionId: options.executionId, ...safe };
      const event = { type, fields: safe, line } as ExecutionEvent;
      deliver(byType.get(type) ?? [], event, type);
      deliver(any, event, type);
    },
    on(type, handler) {
      let set = byType.get(type);
      if (!set) byType.set(type, (set = new Set()));
      return subscribe(set, (event: ExecutionEvent) => handler(event.fields as never, event as never));
    },
    onAny: (handler) => subscribe(any, handler),
    mark(mark) {
      deliver(marks, { ...mark, label: options.redact(mark.label), ...(mark.point ? { point: { ...mark.point } } : {}) }, 'mark');
    },
    onMark: (handler) => subscribe(marks, handler),
    setOrigin(epochMs) {
      origin = epochMs;
    },
  };
}
