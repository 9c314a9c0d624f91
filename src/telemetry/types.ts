/**
 * The process log's port (a pino-compatible subset). It imports nothing: every folder logs, and
 * `telemetry/` sits below them all. An execution's events are a stream of their own
 * (event-stream.ts), their vocabulary the runner's (execution/events.ts).
 */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/**
 * The tracing port (docs/operations.md#traces): spans of OpenTelemetry's model, with no
 * OpenTelemetry type, so that nothing of it is loaded where tracing is off (`noTracing`,
 * telemetry/tracing.ts). The adapter (src/tracing/) passes every string it is given (names,
 * attribute values, events, status messages) through the redaction of the secrets alive in the
 * process, as the process log does: no caller has to remember which value could carry one.
 */
export type TraceValue = string | number | boolean | readonly string[] | readonly number[];
/** Attributes; an undefined or null value is left out. */
export type TraceAttributes = Readonly<Record<string, TraceValue | undefined | null>>;
export type TraceSpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

export interface TraceSpanOptions {
  kind?: TraceSpanKind;
  attributes?: TraceAttributes;
  /** When the span began (epoch ms): a span made once what it covers is over. Default: now. */
  startMs?: number;
  /**
   * The span's parent instead of the active span: a span of this process, or a W3C `traceparent`
   * it continues (a job's, a request's header; one that cannot be read starts a new trace).
   * `null`: a new trace whatever is active.
   */
  parent?: TraceSpan | string | null;
}

export interface TraceSpan {
  setAttributes(attributes: TraceAttributes): void;
  /** Something that happened at one moment of the span (epoch ms; default now). */
  addEvent(name: string, attributes?: TraceAttributes, atMs?: number): void;
  /** The span failed: status error with `message`, and `error.type` = `type` (an error code). */
  fail(type: string, message?: string): void;
  /** Ends the span (epoch ms; default now); a second call does nothing. */
  end(endMs?: number): void;
  /** The span as a W3C `traceparent`, for a job or a request to carry; undefined where there is no trace. */
  readonly traceparent: string | undefined;
}

export interface Tracing {
  /** False for `noTracing`: callers may skip work only a span would use. */
  readonly enabled: boolean;
  /** Starts a span, a child of `options.parent` or else of the active span. */
  startSpan(name: string, options?: TraceSpanOptions): TraceSpan;
  /** Runs `fn` with `span` active: the spans it starts are its children, its log lines carry its ids. */
  withSpan<T>(span: TraceSpan, fn: () => T): T;
  /** Starts a span, runs `fn` with it active, and ends it when `fn` settles (failed when it throws). */
  inSpan<T>(name: string, options: TraceSpanOptions, fn: (span: TraceSpan) => Promise<T>): Promise<T>;
  /** Adds the active span's W3C headers (`traceparent`, `tracestate`) to `headers`. */
  inject(headers: Record<string, string>): void;
  /** The active span's ids, as every log line written while it is open carries them. */
  logFields(): { trace_id: string; span_id: string } | undefined;
  /** Exports what is left, then stops; bounded by the exporter's time limit. */
  shutdown(): Promise<void>;
}
