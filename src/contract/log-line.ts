/**
 * One line of an execution's `logs.jsonl` (docs/counters-and-artifacts.md#logsjsonl), as the
 * worker writes it and the live view carries it: the common fields (when, where on the video's
 * timeline, which event, whose), then the event's own fields, which depend on its type (the map
 * of them is the worker's, src/execution/events.ts) and are kept as they are.
 */
import { z } from 'zod';
import { isoTime } from './json.js';

/** An event type: snake_case (`execution_received`, `model_turn`). */
export const eventType = z.string().regex(/^[a-z][a-z0-9_]*$/, 'an event type is snake_case (execution_received)');

export const logLine = z.looseObject({
  ts: isoTime,
  /** Milliseconds since the run's start (`started`); a line before it counts from the log's opening. */
  t: z.number().finite(),
  type: eventType,
  executionId: z.string().min(1),
});
export type LogLine = z.infer<typeof logLine>;
