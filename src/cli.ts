/**
 * `execution-worker` commands (docs/operations.md#commands):
 *   run --spec FILE [--input JSON] [--replay FILE] [--out DIR]   one execution, no queue, no API
 *   serve                                                        the local API and dashboard
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createBrowser, createProfileDirectory, createRecorder, createRunnerDeps, processSecrets } from './compose.js';
import { ConfigError, loadConfig, type Config } from './config/schema.js';
import { loadServeConfig } from './config/serve.js';
import { startLocalServer } from './local-service/server.js';
import { abortReason } from './contract/errors.js';
import { loadRecording } from './model/playback-client.js';
import { runExecution } from './runner/run-execution.js';
import { createLocalStore } from './storage/local-store.js';
import { createLocalProfileStore } from './storage/profile-store.js';
import { createLogger } from './telemetry/logger.js';
import { noTracing } from './telemetry/tracing.js';
import type { Tracing } from './telemetry/types.js';
import { LOCAL_API_SERVICE_NAME, startTracing, WORKER_SERVICE_NAME } from './tracing/start.js';

const USAGE = `Usage:
  execution-worker run --spec FILE [--input JSON] [--replay FILE] [--out DIR]
      Runs one execution with no queue and no API. Artifacts go to DIR/executions/<id>/
      (default DIR: ./artifacts); output.json is printed on stdout. Exit 0 when completed,
      1 when failed, 2 on bad usage.
  execution-worker serve
      Runs the local API and dashboard on PORT (default 8080), keys from API_KEYS,
      answering for its own address and the names in PUBLIC_HOSTS.
Configuration comes from the environment (see docs/configuration.md).`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'run') return await runCommand(rest);
    if (command === 'serve') return await serveCommand(rest);
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    }
    process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
    return 2;
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

class UsageError extends Error {}

async function runCommand(args: string[]): Promise<number> {
  const { values } = parseArgsOrThrow(args, {
    spec: { type: 'string' },
    input: { type: 'string' },
    replay: { type: 'string' },
    out: { type: 'string' },
  });
  if (!values.spec) throw new UsageError(`--spec FILE is required\n${USAGE}`);
  const specification = await readJsonFile(values.spec, '--spec');
  let inputPayload: unknown = null;
  if (values.input !== undefined) {
    try {
      inputPayload = JSON.parse(values.input);
    } catch (error) {
      throw new UsageError(`--input is not valid JSON: ${(error as Error).message}`);
    }
  }
  const config = loadConfig();
  // stdout carries output.json alone: the log goes to stderr.
  let tracing: Tracing = noTracing;
  const logger = createLogger({ level: config.LOG_LEVEL, destination: process.stderr, secrets: processSecrets(config), traceIds: () => tracing.logFields() });
  const replay = values.replay ? await loadRecording(values.replay).catch((error: Error) => {
    throw new UsageError(`--replay: ${error.message}`);
  }) : undefined;
  if (!replay && !config.ANTHROPIC_API_KEY && !config.ANTHROPIC_BASE_URL) {
    throw new UsageError('set ANTHROPIC_API_KEY to run with Claude, or pass --replay FILE to replay a recorded run');
  }
  const outDir = path.resolve(values.out ?? 'artifacts');
  // The run is one trace too, when the OpenTelemetry variables name an endpoint (docs/operations.md#traces).
  tracing = await startTracing(config, { serviceName: WORKER_SERVICE_NAME, logger });
  const browser = createBrowser(config, logger, tracing);
  const recorder = createRecorder(config, logger);
  const store = createLocalStore({ dir: outDir, prefix: '', ...(config.ARTIFACT_BASE_URL ? { publicBaseUrl: config.ARTIFACT_BASE_URL } : {}) });
  // Browser profiles (docs/profiles.md) beside the artifacts in the --out folder, as the artifacts.
  const profileStore = createLocalProfileStore({ dir: outDir, prefix: '' });
  const deps = createRunnerDeps({ config: runConfig(config), logger, browser, store, profileStore, tracing, ...(recorder ? { recorder } : {}), ...(replay ? { replay } : {}) });

  const controller = new AbortController();
  // Ctrl-C ends the run like a worker shutdown: finalised, artifacts written, reported failed.
  const onSignal = () => controller.abort(abortReason('worker_shutdown', 'interrupted by a signal'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const executionId = `local-${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
    const summary = await runExecution(deps, { executionId, specification, inputPayload }, controller.signal);
    if (summary.status === 'skipped') return 1;
    process.stdout.write(`${JSON.stringify(summary.document, null, 2)}\n`);
    logger.info({ executionId, dir: path.join(outDir, 'executions', executionId), ...summary.urls }, 'artifacts written');
    return summary.status === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await Promise.allSettled([browser.close(), recorder?.close?.()]);
    await tracing.shutdown();
  }
}

/** The one-shot run ignores the queue and API settings. */
function runConfig(config: Config): Config {
  return { ...config, API_KEY: undefined, API_BASE_URL: undefined };
}

async function serveCommand(args: string[]): Promise<number> {
  parseArgsOrThrow(args, {});
  const config = loadServeConfig();
  let tracing: Tracing = noTracing;
  const logger = createLogger({ level: config.LOG_LEVEL, secrets: [...config.API_KEYS, ...processSecrets(config)], traceIds: () => tracing.logFields() });
  // The execute route and the schedules' ticks start each execution's trace (docs/operations.md#traces).
  tracing = await startTracing(config, { serviceName: LOCAL_API_SERVICE_NAME, logger });
  // Browser profiles where the workers keep them (the bucket, else ARTIFACTS_DIR): listed, deleted.
  const profiles = createProfileDirectory(config, logger);
  try {
    const server = await startLocalServer({
      port: config.PORT,
      host: config.HOST,
      apiKeys: config.API_KEYS,
      publicHosts: config.PUBLIC_HOSTS,
      redisUrl: config.REDIS_URL,
      queueName: config.EXECUTION_QUEUE,
      queuePrefix: config.QUEUE_PREFIX,
      artifactsDir: config.ARTIFACTS_DIR,
      profiles,
      ...(config.PROFILE_KEYS ? { inputKeys: config.PROFILE_KEYS } : {}),
      logger,
      tracing,
      allowEverySecond: config.TEST_ONLY_SCHEDULE_EVERY_SECOND,
    });
    logger.info({ url: server.url }, 'local API and dashboard listening');
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await server.close();
  } finally {
    profiles.close();
    await tracing.shutdown();
  }
  return 0;
}

type OptionSpec = Record<string, { type: 'string' | 'boolean' }>;

function parseArgsOrThrow<T extends OptionSpec>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${USAGE}`);
  }
}

async function readJsonFile(file: string, flag: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: ${file} is not valid JSON: ${(error as Error).message}`);
  }
}
