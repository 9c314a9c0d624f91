/**
 * Composition root of the daemon: config → adapters → wiring → signals (docs/operations.md#signals-and-shutdown).
 * `npm start` runs this file.
 */
import { ConfigError } from './config/env.js';
import { loadConfig, requireDaemonSettings } from './config/schema.js';
import { processSecrets } from './compose.js';
import { startDaemon, type Daemon } from './daemon.js';
import { createLogger } from './telemetry/logger.js';
import { noTracing } from './telemetry/tracing.js';
import type { Tracing } from './telemetry/types.js';
import { startTracing, WORKER_SERVICE_NAME } from './tracing/start.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
    requireDaemonSettings(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  // Log lines carry the ids of the span open where they are written, once tracing has started.
  let tracing: Tracing = noTracing;
  const logger = createLogger({ level: config.LOG_LEVEL, secrets: processSecrets(config), traceIds: () => tracing.logFields() });
  // Signals are handled from the first moment: a SIGTERM while the daemon starts (a pod stopped
  // during a rollout) stops it once started, through the same graceful path, instead of killing
  // it between two steps of its start.
  const running: { daemon?: Daemon } = {};
  let stopWhenStarted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const { daemon } = running;
    if (!daemon) {
      if (stopWhenStarted) {
        logger.warn({ signal }, 'second stop request while starting: exiting now');
        process.exit(1);
      }
      stopWhenStarted = signal;
      logger.info({ signal }, 'stop requested while starting: stopping once started');
      return;
    }
    void daemon.shutdown(signal).then(async () => {
      // The last spans (the final reports') are exported before the process ends.
      await tracing.shutdown();
      logger.info({}, 'bye');
      process.exitCode = 0;
      // Everything is closed; if a stray handle keeps the loop alive, do not hang the pod.
      setTimeout(() => process.exit(0), 5_000).unref();
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // With no OTEL_EXPORTER_OTLP_*ENDPOINT, nothing of OpenTelemetry is loaded (docs/operations.md#traces).
  tracing = await startTracing(config, { serviceName: WORKER_SERVICE_NAME, logger });
  running.daemon = await startDaemon(config, logger, { tracing });
  if (stopWhenStarted) onSignal(stopWhenStarted);
}

main().catch((error: unknown) => {
  process.stderr.write(`execution-worker failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
