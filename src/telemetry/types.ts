import type { ExecutionEventName, ExecutionEvents } from './execution-events.js';

/**
 * Telemetry ports. `EventSink` receives an execution's structured events (they become
 * `logs.jsonl`); `Logger` is the process log (pino-compatible subset).
 */

export interface EventSink {
  /**
   * Records one event, its fields as the event map says (`ExecutionEvents`, execution-events.ts).
   * Fields must be JSON-serialisable; secrets are redacted by the sink.
   * `atMs` (epoch ms) dates an event that began before it is recorded, such as an action
   * logged once it finished: its `t` is then when it began.
   */
  emit<K extends ExecutionEventName>(type: K, fields: ExecutionEvents[K], atMs?: number): void;
}

export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}
