/**
 * Wiring shared by the two entry points (the daemon in main.ts and the one-shot CLI): config
 * → adapters → runner deps. Only this file, main.ts and cli.ts know concrete adapters.
 */
import { createConfinedFetcher } from './browser/confined-fetch.js';
import { createHostMatcher } from './browser/host-matcher.js';
import { chromiumSandboxDisabled, createPlaywrightSandbox } from './browser/playwright-sandbox.js';
import type { BrowserSandbox } from './browser/types.js';
import type { Config } from './config/schema.js';
import type { ControlPlane } from './control-plane/types.js';
import { ExecutionError } from './contract/errors.js';
import { readProfileHeader } from './domain/profile-crypto.js';
import { s3Location } from './domain/input-files.js';
import type { LiveRelay } from './live/types.js';
import { createAnthropicModel } from './model/anthropic-client.js';
import { createModelPricing } from './model/prices.js';
import { recordTurns } from './model/recording-client.js';
import { createPlaybackModel } from './model/playback-client.js';
import { createNoKeyModel, modelKeyMissing } from './model/no-key-client.js';
import { modelLifecycle, retiredReason } from './model/lifecycle.js';
import { chooseActionSpace } from './model/tool-versions.js';
import type { ModelClient } from './model/types.js';
import { createFfmpegRecorder } from './recorder/ffmpeg-recorder.js';
import type { VideoRecorder } from './recorder/types.js';
import type { RunnerDeps } from './runner/types.js';
import { createLocalStore } from './storage/local-store.js';
import { createLocalProfileStore, createS3ProfileStore } from './storage/profile-store.js';
import { createS3ObjectReader } from './storage/s3-object-reader.js';
import { createS3Store } from './storage/s3-store.js';
import { createS3Eraser } from './storage/s3-eraser.js';
import type { ArtifactStore, ProfileStore } from './storage/types.js';
import { createSilentLogger } from './telemetry/logger.js';
import type { Logger, Tracing } from './telemetry/types.js';
import { tracingSecrets } from './config/tracing.js';
import { withUploadSpans } from './storage/traced-store.js';
import { createActionSpace } from './toolset/create.js';
import type { Specification } from './contract/specification.js';
import type { RecordingFile } from './contract/recording.js';

/** Where the artifact store's bucket is: artifacts and browser profiles are kept there. */
function bucketSettings(config: Config, bucket: string) {
  return { bucket, region: config.S3_REGION, forcePathStyle: config.S3_FORCE_PATH_STYLE, prefix: config.S3_PREFIX, ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}) };
}

export function createArtifactStore(config: Config, logger: Logger): ArtifactStore & { close?(): void } {
  if (config.S3_BUCKET) {
    return createS3Store({ ...bucketSettings(config, config.S3_BUCKET), logger, ...(config.ARTIFACT_BASE_URL ? { publicBaseUrl: config.ARTIFACT_BASE_URL } : {}) });
  }
  return createLocalStore({ dir: config.ARTIFACTS_DIR, prefix: config.S3_PREFIX, ...(config.ARTIFACT_BASE_URL ? { publicBaseUrl: config.ARTIFACT_BASE_URL } : {}) });
}

/** What removes a deleted workflow's artifacts for `serve` (docs/api.md#deleting-a-workflow): the bucket's eraser, else none (the folder's is the local service's own). */
export function createBucketEraser(config: Config): ReturnType<typeof createS3Eraser> | undefined {
  return config.S3_BUCKET ? createS3Eraser({ ...bucketSettings(config, config.S3_BUCKET), maxAttempts: 5 }) : undefined;
}

/** Browser profiles' blobs beside the artifacts (docs/profiles.md): the bucket, else ARTIFACTS_DIR. */
export function createProfileStore(config: Config): ProfileStore & { close?(): void } {
  if (config.S3_BUCKET) {
    return createS3ProfileStore({ ...bucketSettings(config, config.S3_BUCKET), maxAttempts: 5 });
  }
  return createLocalProfileStore({ dir: config.ARTIFACTS_DIR, prefix: config.S3_PREFIX });
}

/**
 * The profiles as the local service lists them (docs/profiles.md): id, hosts, when saved and
 * size, from each blob's clear header; no key is needed and no value is read. A header that
 * cannot be read is logged (on `logger`; without one, not at all) and its profile listed without
 * hosts.
 */
export function createProfileDirectory(config: Config, logger: Logger = createSilentLogger()) {
  const store = createProfileStore(config);
  return {
    async list(): Promise<Array<{ id: string; hosts: string[]; updated: string; size: number }>> {
      const out = [];
      for (const blob of await store.list()) {
        // Listed all the same, without its hosts: it can still be deleted.
        const bytes = await store.read(blob.id).catch((error: unknown) => logger.warn({ profile: blob.id, err: String(error) }, "could not read a browser profile's header"));
        const read = bytes ? readProfileHeader(bytes) : undefined;
        out.push({ id: blob.id, hosts: read?.ok ? read.header.hosts : [], updated: read?.ok ? read.header.savedAt : blob.updatedAt, size: blob.bytes });
      }
      return out;
    },
    delete: (id: string) => store.delete(id),
    close: () => store.close?.(),
  };
}

export function createBrowser(config: Config, logger: Logger, tracing?: Tracing): BrowserSandbox {
  if (chromiumSandboxDisabled()) {
    logger.warn(
      { uid: 0, chromiumSandbox: false },
      "running as root: Chromium's own sandbox cannot start and is OFF (--no-sandbox); run the worker as a non-root user, as the Docker image does (docs/operations.md#browser-sandbox)",
    );
  }
  return createPlaywrightSandbox({
    logger: logger.child({ component: 'browser' }),
    ...(tracing ? { tracing } : {}),
    ...(config.CHROMIUM_PATH ? { chromiumPath: config.CHROMIUM_PATH } : {}),
    ...(config.BROWSER_HOST_RULES ? { hostRules: config.BROWSER_HOST_RULES } : {}),
  });
}

export function createRecorder(config: Config, logger: Logger): VideoRecorder | undefined {
  if (!config.VIDEO_ENABLED) return undefined;
  return createFfmpegRecorder({
    fps: config.VIDEO_FPS,
    crf: config.VIDEO_CRF,
    maxBitrate: config.VIDEO_MAX_BITRATE,
    maxBytes: config.VIDEO_MAX_BYTES,
    encoder: config.VIDEO_ENCODER,
    logger: logger.child({ component: 'recorder' }),
    ...(config.FFMPEG_PATH ? { ffmpegPath: config.FFMPEG_PATH } : {}),
  });
}

/** The model of each execution: Claude, or a recording played back; with the stage that records it (the runner puts it in the run's pipeline). */
export function modelFactory(config: Config, logger: Logger, playbackOf?: RecordingFile): RunnerDeps['createModel'] {
  // No key: each run fails with a message that says what to do (model/no-key-client.ts).
  const live: ModelClient | undefined = playbackOf
    ? undefined
    : modelKeyMissing(config.ANTHROPIC_API_KEY)
      ? createNoKeyModel()
      : createAnthropicModel({
        maxRetries: config.ANTHROPIC_MAX_RETRIES,
        logger,
        ...(config.ANTHROPIC_API_KEY ? { apiKey: config.ANTHROPIC_API_KEY } : {}),
        ...(config.ANTHROPIC_BASE_URL ? { baseURL: config.ANTHROPIC_BASE_URL } : {}),
        ...(config.ANTHROPIC_MODEL_CAPABILITIES ? { capabilityOverrides: config.ANTHROPIC_MODEL_CAPABILITIES } : {}),
      });
  return ({ modelId, toolVersion, display }) => {
    // A playback gets a fresh cursor per execution; the live client is shared.
    const inner = playbackOf ? createPlaybackModel(playbackOf) : live!;
    const recorder = recordTurns({ model: modelId, toolVersion, display });
    return { client: inner, record: recorder.intercept, recording: () => recorder.recording() };
  };
}

/** Allow-list and start URL checks, with the one host matcher the browser uses too. */
export function checkSpecification(spec: Specification, startUrl: string): void {
  const matcher = createHostMatcher(spec.allowedDomains);
  const allowed = matcher.allowsUrl(startUrl);
  if (!allowed.ok) throw new ExecutionError('invalid_specification', `startUrl ${startUrl} is not allowed: ${allowed.reason}`);
}

/** The http(s) input file check, with the one host matcher the browser uses. */
export function checkFileUrl(url: string, allowedDomains: readonly string[]): { ok: true } | { ok: false; reason: string } {
  return createHostMatcher(allowedDomains).allowsUrl(url);
}

/**
 * Opens input files (docs/files-and-codes.md): s3:// with the worker's S3 settings (the standard
 * credentials chain unless `credentials` are given, as tests do), http(s):// through the
 * confinement of the execution's allow-list.
 */
export function inputFileOpener(config: Config, logger: Logger, credentials?: { accessKeyId: string; secretAccessKey: string }): RunnerDeps['openInputFile'] {
  const s3 = createS3ObjectReader({
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    logger,
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
    ...(credentials ? { credentials } : {}),
  });
  const web = createConfinedFetcher({ logger, ...(config.BROWSER_HOST_RULES ? { hostRules: config.BROWSER_HOST_RULES } : {}) });
  return (url, allowedDomains, signal, onBlocked) => {
    if (url.startsWith('s3:')) {
      const { bucket, key } = s3Location(url);
      return s3.open(bucket, key, signal);
    }
    return web.open(url, allowedDomains, signal, onBlocked);
  };
}

/**
 * The keys the process holds: scrubbed from the process log for its whole life and from every
 * run's logs and artifacts (docs/secrets.md#exits). AWS keys come from the standard chain's
 * environment variables when they are set there.
 */
export function processSecrets(config: Config, env: NodeJS.ProcessEnv = process.env): string[] {
  return [config.API_KEY, config.ANTHROPIC_API_KEY, env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN, ...tracingSecrets(config)].filter(
    (s): s is string => typeof s === 'string' && s.length > 0,
  );
}

/**
 * The runner's choice of action space, with the model's life (docs/model.md#retired-and-deprecated-models):
 * a retired model is refused before the run, a deprecated one runs and is logged with its end of life.
 */
export function actionSpaceChooser(now: () => number): RunnerDeps['chooseActionSpace'] {
  return (modelId, requested) => {
    const life = modelLifecycle(modelId, now());
    if (life.status === 'retired') return { ok: false, reason: retiredReason(modelId, life.retiredOn), field: 'model' };
    const chosen = chooseActionSpace(modelId, requested);
    if (!chosen.ok) return chosen;
    const { tools } = chosen;
    return { ok: true, choice: { kind: chosen.kind, computer: tools.computer, images: tools.images }, ...(life.status === 'deprecated' ? { endOfLife: life.endOfLife } : {}) };
  };
}

export function createRunnerDeps(options: {
  config: Config;
  logger: Logger;
  browser: BrowserSandbox;
  store: ArtifactStore;
  recorder?: VideoRecorder;
  controlPlane?: ControlPlane;
  /** A recording played back instead of calling Claude. */
  recording?: RecordingFile;
  /** What output.json says of the recording played back (set with `recording`). */
  playback?: RunnerDeps['playback'];
  /** Subscribers of every execution's events (the daemon's metrics). */
  observers?: RunnerDeps['observers'];
  /** Replaces the default input file opener (tests give S3 credentials this way). */
  openInputFile?: RunnerDeps['openInputFile'];
  /** Where versions' run caches are kept (the daemon's Redis); none for the one-shot CLI. */
  runCache?: RunnerDeps['runCache'];
  /** Where browser profiles are kept; default beside the artifacts (createProfileStore). */
  profileStore?: ProfileStore;
  live?: LiveRelay;
  human?: RunnerDeps['human'];
  /** Where each execution's trace goes (startTracing); absent: nowhere. */
  tracing?: Tracing;
}): RunnerDeps {
  const { config, logger } = options;
  return {
    browser: options.browser,
    store: options.tracing ? withUploadSpans(options.store, options.tracing) : options.store,
    ...(options.tracing ? { tracing: options.tracing } : {}),
    ...(options.recorder ? { recorder: options.recorder } : {}),
    ...(options.controlPlane ? { controlPlane: options.controlPlane } : {}),
    ...(options.observers ? { observers: options.observers } : {}),
    ...(options.live ? { live: options.live } : {}),
    ...(options.human ? { human: options.human } : {}),
    createModel: modelFactory(config, logger, options.recording),
    ...(options.recording && options.playback ? { playback: options.playback } : {}),
    pricing: createModelPricing(config.MODEL_PRICES ?? {}),
    chooseActionSpace: actionSpaceChooser(Date.now),
    createActionSpace,
    checkSpecification,
    checkFileUrl,
    openInputFile: options.openInputFile ?? inputFileOpener(config, logger),
    logger,
    ...(options.runCache ? { runCache: options.runCache } : {}),
    profiles: {
      store: options.profileStore ?? createProfileStore(config),
      ...(config.PROFILE_KEYS ? { keys: config.PROFILE_KEYS } : {}),
      maxBytes: config.PROFILE_MAX_BYTES,
    },
    settings: {
      runCache: config.RUN_CACHE === 'on',
      defaultModel: config.ANTHROPIC_MODEL,
      maxSteps: config.MAX_STEPS,
      timeoutMs: config.EXECUTION_TIMEOUT_MS,
      humanTimeoutMs: config.HUMAN_TIMEOUT_MS,
      viewport: { width: config.VIEWPORT_WIDTH, height: config.VIEWPORT_HEIGHT },
      workDir: config.WORK_DIR,
      stepScreenshots: config.STEP_SCREENSHOTS,
      secrets: processSecrets(config),
      budget: {
        ...(config.RUN_BUDGET_TOKENS !== undefined ? { tokens: config.RUN_BUDGET_TOKENS } : {}),
        ...(config.RUN_BUDGET_USD !== undefined ? { usd: config.RUN_BUDGET_USD } : {}),
      },
      downloadMaxBytes: config.DOWNLOAD_MAX_BYTES,
      browserMemoryMaxBytes: config.BROWSER_MEMORY_MAX_BYTES,
      scratchDiskMaxBytes: config.SCRATCH_DISK_MAX_BYTES,
      inputFileMaxBytes: config.INPUT_FILE_MAX_BYTES,
      inputFileTimeoutMs: config.INPUT_FILE_TIMEOUT_MS,
      inputFileBuckets: config.INPUT_FILE_BUCKETS,
      pageLimits: { tabsMax: config.BROWSER_TABS_MAX, consoleLineMaxChars: config.CONSOLE_LINE_MAX_CHARS, consoleEntriesMax: config.CONSOLE_ENTRIES_MAX, consoleBytesMax: config.CONSOLE_BYTES_MAX },
    },
  };
}
