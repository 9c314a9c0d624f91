/**
 * Composition root of the daemon: config → adapters → wiring → signals (contract §8).
 * `npm start` runs this file.
 */
import { ConfigError, loadConfig, requireDaemonSettings } from './config/schema.js';
import { startDaemon } from './daemon.js';
import { createLogger } from './telemetry/logger.js';

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
  const logger = createLogger({ level: config.LOG_LEVEL });
  const daemon = await startDaemon(config, logger);
  const onSignal = (signal: NodeJS.Signals) => {
    void daemon.shutdown(signal).then(() => {
      logger.info({}, 'bye');
      process.exitCode = 0;
      // Everything is closed; if a stray handle keeps the loop alive, do not hang the pod.
      setTimeout(() => process.exit(0), 5_000).unref();
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

main().catch((error: unknown) => {
  process.stderr.write(`execution-worker failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
