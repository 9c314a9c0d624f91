/**
 * The process log's port (a pino-compatible subset). It imports nothing: every folder logs, and
 * `telemetry/` sits below them all. An execution's events are a stream of their own
 * (event-stream.ts), their vocabulary the runner's (runner/events.ts).
 */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}
