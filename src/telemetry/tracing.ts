import type { TraceSpan, Tracing } from './types.js';

/**
 * Tracing turned off (no endpoint set, docs/operations.md#traces): every call does nothing and
 * loads nothing, so a process without the OpenTelemetry variables never imports the SDK. A span
 * told to continue a `traceparent` carries that one on, as a service that takes part in no trace
 * still passes the caller's along (W3C Trace Context).
 */

const idle: TraceSpan = {
  setAttributes: () => undefined,
  addEvent: () => undefined,
  fail: () => undefined,
  end: () => undefined,
  traceparent: undefined,
};

export const noTracing: Tracing = {
  enabled: false,
  startSpan: (_name, options) => (typeof options?.parent === 'string' ? { ...idle, traceparent: options.parent } : idle),
  withSpan: (_span, fn) => fn(),
  inSpan: (_name, _options, fn) => fn(idle),
  inject: () => undefined,
  logFields: () => undefined,
  shutdown: () => Promise.resolve(),
};
