import { pino } from 'pino';
import type { Logger } from './types.js';

/**
 * The process log: JSON lines on stdout (contract §8). Known secret-bearing fields are
 * censored by path; values are never logged by the callers in the first place.
 */
export function createLogger(options: { level: string; name?: string; destination?: NodeJS.WritableStream }): Logger {
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
