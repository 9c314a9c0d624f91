/**
 * W3C Trace Context's `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header), as a
 * job carries it (docs/queue-and-jobs.md#job-data) and an HTTP request sends it. Read here, with no
 * tracing library, so that the job's schema can say whether one is usable without loading one.
 */

export interface TraceParent {
  traceId: string;
  spanId: string;
  /** The trace flags; bit 0 is "sampled". */
  flags: number;
}

const FORM = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The parts of a `traceparent`, or undefined when it is not one: the form, lower-case hex, no id of
 * zeros, version `ff` refused, and nothing after the flags in version `00` (a later version may
 * add fields, which are ignored as the specification says).
 */
export function parseTraceParent(text: string): TraceParent | undefined {
  const match = FORM.exec(text.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: parseInt(flags, 16) };
}

/** The `traceparent` of a span (version 00). */
export function formatTraceParent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.flags & 0xff).toString(16).padStart(2, '0')}`;
}
