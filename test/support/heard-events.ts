import { createExecutionEvents, type ExecutionEventStream } from '../../src/execution/events.js';

/** One event as a test reads it: its type and fields, as its `logs.jsonl` line has them. */
export interface HeardEvent {
  type: string;
  fields: Record<string, unknown>;
}

/**
 * A real execution event stream for a unit test (nothing redacted): every line it tells, in
 * order, and the labels of its timeline marks.
 */
export function heardEvents(executionId = 'e1'): { events: ExecutionEventStream; lines: HeardEvent[]; marks: string[] } {
  const events = createExecutionEvents({ executionId, redact: (value) => value });
  const lines: HeardEvent[] = [];
  const marks: string[] = [];
  events.onLine(({ ts: _ts, t: _t, type, executionId: _id, ...fields }) => lines.push({ type, fields }));
  events.on('timeline_mark', ({ label }) => marks.push(label));
  return { events, lines, marks };
}
