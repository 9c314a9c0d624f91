import { pino } from 'pino';
import { createSecretVault } from '../domain/secrets.js';
import { scrubFromProcessLog, scrubLogLine } from './log-secrets.js';
import type { Logger } from './types.js';

/**
 * The process log: JSON lines on stdout (docs/operations.md). Known secret-bearing fields are
 * censored by path, and every line passes through the redaction of each secret alive in the
 * process, in all its forms (log-secrets.ts), whatever field carries it.
 */
export function createLogger(options: {
  level: string;
  name?: string;
  destination?: NodeJS.WritableStream;
  /** Values (keys) scrubbed from every line for the logger's whole life. */
  secrets?: readonly string[];
  /**
   * The ids of the span open where a line is written (the tracing port's `logFields`), added to
   * the line as `trace_id` and `span_id` (docs/operations.md#traces). Read as each line is written,
   * so it may be bound after the logger is made (tracing starts once the logger can report on it).
   */
  traceIds?: () => { trace_id: string; span_id: string } | undefined;
}): Logger {
  const { traceIds } = options;
  if (options.secrets && options.secrets.length > 0) scrubFromProcessLog(createSecretVault(undefined, undefined, options.secrets).redact);
  return pino(
    {
      level: options.level,
      name: options.name ?? 'execution-worker',
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['apiKey', 'API_KEY', 'ANTHROPIC_API_KEY', '*.apiKey', 'headers["x-service-key"]', 'headers["x-api-key"]', 'config.API_KEY', 'config.ANTHROPIC_API_KEY'],
        censor: '[REDACTED]',
      },
      formatters: { level: (label) => ({ level: label }) },
      // A fresh object each line: pino merges the line's own fields into what the mixin returns.
      ...(traceIds ? { mixin: () => traceIds() ?? {} } : {}),
      hooks: { streamWrite: scrubLogLine },
    },
    (options.destination ?? process.stdout) as pino.DestinationStream,
  ) as unknown as Logger;
}

/** A logger that drops everything (unit tests). */
export function createSilentLogger(): Logger {
  const noop = () => undefined;
  const logger: Logger = { debug: noop, info: noop, warn: noop, error: noop, child: () => logger };
  return logger;
}
