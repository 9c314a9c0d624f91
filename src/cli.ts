/**
 * `execution-worker` commands (docs/operations.md#commands):
 *   run --spec FILE [--input JSON] [--replay FILE] [--out DIR]   one execution, no queue, no API
 *   serve                                                        the local API and dashboard
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createBucketEraser, createBrowser, createProfileDirectory, createRecorder, createRunnerDeps, processSecrets } from './compose.js';
import { ConfigError } from './config/env.js';
import { loadConfig, type Config } from './config/schema.js';
import { loadServeConfig } from './config/serve.js';
import { createFolderEraser } from './local-service/artifact-eraser.js';
import { checkWorkflowBody } from './local-service/check-workflow-body.js';
import { startLocalServer } from './local-service/server.js';
import { runMcpStdio } from './mcp/mcp-stdio.js';
import { abortReason } from './contract/errors.js';
import { loadRecording } from './model/playback-client.js';
import { modelKeyMissing, NO_KEY_AT_START } from './model/no-key-client.js';
import { runExecution } from './runner/run-execution.js';
import { createLocalStore } from './storage/local-store.js';
import { createLocalProfileStore } from './storage/profile-store.js';
import { createLogger } from './telemetry/logger.js';
import { noTracing } from './telemetry/tracing.js';
import type { Tracing } from './telemetry/types.js';
import { LOCAL_API_SERVICE_NAME, startTracing, WORKER_SERVICE_NAME } from './tracing/start.js';

const RUN_USAGE = `Usage: execution-worker run --spec FILE [--input JSON] [--replay FILE] [--out DIR]
  Runs one execution with no queue and no API. FILE is a workflow as POST /api/workflows takes it
  (the same fields and checks: an unknown field is refused). Artifacts go to DIR/executions/<id>/
  (default DIR: ./artifacts); output.json is printed on stdout.
  --spec FILE     the workflow (JSON)
  --input JSON    the input payload (JSON text; default null)
  --replay FILE   replay this recording.json instead of calling Claude
  --out DIR       where the artifacts go (default ./artifacts)
  -h, --help      this text
  Exit 0 when completed, 1 when failed, 2 on bad usage, a bad specification or a bad
  environment variable (each named on its line).`;

const SERVE_USAGE = `Usage: execution-worker serve
  Runs the local API and dashboard on PORT (default 8080), keys from API_KEYS (comma-separated),
  enqueueing on REDIS_URL, answering for its own address and the names in PUBLIC_HOSTS.
  -h, --help      this text
  Exit 0 when stopped by SIGINT or SIGTERM, 2 on a bad environment variable (each named on its
  line) or when it cannot start.`;

const MCP_USAGE = `Usage: execution-worker mcp
  An MCP server over stdio (docs/mcp.md): the workflows the key SERVICE_KEY may run, as tools,
  through the local API at API_BASE_URL.
  -h, --help      this text
  Exit 2 when SERVICE_KEY or API_BASE_URL is missing or the key is refused.`;

const USAGE = `Usage:
  execution-worker run --spec FILE [--input JSON] [--replay FILE] [--out DIR]
      Runs one execution with no queue and no API.
  execution-worker serve
      Runs the local API and dashboard.
  execution-worker help | --help | -h
      This text. \`execution-worker <command> --help\` tells one command's options.
  execution-worker mcp
      An MCP server over stdio for the key SERVICE_KEY, calling the local API at API_BASE_URL.
Configuration comes from the environment (see docs/configuration.md).`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'run') return await orHelp(RUN_USAGE, () => runCommand(rest));
    if (command === 'serve') return await orHelp(SERVE_USAGE, () => serveCommand(rest));
    if (command === 'mcp') return await orHelp(MCP_USAGE, () => { parseArgsOrThrow(rest, {}); return runMcpStdio(); });
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    }
    process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
    return 2;
  } catch (error) {
    // One clear message, never a stack trace: each bad variable on its line (config/env.ts).
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

class UsageError extends Error {}
/** A --spec file the API would refuse: said alone, without the usage text. */
class SpecificationError extends UsageError {}

/** `--help` / `-h` of a command: its usage on stdout, exit 0. */
class HelpAsked extends Error {}

async function orHelp(usage: string, command: () => Promise<number>): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (error instanceof HelpAsked) {
      process.stdout.write(`${usage}\n`);
      return 0;
    }
    if (error instanceof UsageError && !(error instanceof SpecificationError)) throw new UsageError(`${error.message}\n${usage}`);
    throw error;
  }
}

async function runCommand(args: string[]): Promise<number> {
  const { values } = parseArgsOrThrow(args, {
    spec: { type: 'string' },
    input: { type: 'string' },
    replay: { type: 'string' },
    out: { type: 'string' },
  });
  if (!values.spec) throw new UsageError('--spec FILE is required');
  const specification = await readSpecification(values.spec);
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
  const recording = values.replay ? await loadRecording(values.replay).catch((error: Error) => {
    throw new UsageError(`--replay: ${error.message}`);
  }) : undefined;
  if (!recording && !config.ANTHROPIC_API_KEY && !config.ANTHROPIC_BASE_URL) {
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
  const playback = { recording: path.basename(values.replay ?? ''), reason: '--replay was given: the recording is replayed, no model is called' };
  const deps = createRunnerDeps({ config: runConfig(config), logger, browser, store, profileStore, tracing, ...(recorder ? { recorder } : {}), ...(recording ? { recording, playback } : {}) });

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
  // A deleted workflow's artifacts go with it, where the workers write them.
  const artifacts = createBucketEraser(config) ?? createFolderEraser(config.ARTIFACTS_DIR, config.S3_PREFIX);
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
      artifacts,
      ...(config.PROFILE_KEYS ? { inputKeys: config.PROFILE_KEYS } : {}),
      logger,
      tracing,
      allowEverySecond: config.TEST_ONLY_SCHEDULE_EVERY_SECOND,
      webhookRetryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
      webhookAllowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    });
    logger.info({ url: server.url }, 'local API and dashboard listening');
    // The workers started from this environment would have no key either: said once, here.
    if (modelKeyMissing(config.ANTHROPIC_API_KEY)) logger.warn({}, NO_KEY_AT_START);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await server.close();
  } finally {
    profiles.close();
    artifacts.close?.();
    await tracing.shutdown();
  }
  return 0;
}

type OptionSpec = Record<string, { type: 'string' | 'boolean' }>;

/** The command's options, strict; `--help`/`-h` anywhere among them asks for its usage. */
function parseArgsOrThrow<T extends OptionSpec>(args: string[], options: T) {
  if (args.includes('--help') || args.includes('-h')) throw new HelpAsked();
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The --spec file, checked as POST /api/workflows checks a body (local-service/check-workflow-body.ts):
 * a fault is a bad specification (exit 2), each on its line, named by its field.
 */
async function readSpecification(file: string): Promise<Record<string, unknown>> {
  const read = await readJsonFile(file, '--spec');
  const checked = await checkWorkflowBody(read);
  if (!checked.ok) {
    const lines = checked.issues.map((issue) => `  ${fieldName(issue.loc.filter((part, i) => !(i === 0 && part === 'body'))) || '(the file)'}: ${issue.msg}`);
    throw new SpecificationError(`--spec: ${file} is not a valid specification:\n${lines.join('\n')}`);
  }
  const triggers = (['status', 'triggerType', 'scheduleExpression', 'configuration'] as const).filter((field) => checked.body[field] !== undefined);
  if (triggers.length > 0) {
    throw new SpecificationError(`--spec: ${file}: ${triggers.join(', ')} say how the API runs a version; \`run\` runs once: leave ${triggers.length === 1 ? 'it' : 'them'} out`);
  }
  return checked.body;
}

/** A field's place as a reader writes it: `allowedDomains[0]`, `payloadSchema.properties.user`. */
function fieldName(loc: readonly (string | number)[]): string {
  return loc.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
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
