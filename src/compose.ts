/**
 * Wiring shared by the two entry points (the daemon in main.ts and the one-shot CLI): config
 * → adapters → runner deps. Only this file, main.ts and cli.ts know concrete adapters.
 */
import { createConfinedFetcher } from './browser/confined-fetch.js';
import { createHostMatcher } from './browser/host-matcher.js';
import { createPlaywrightSandbox } from './browser/playwright-sandbox.js';
import type { BrowserSandbox } from './browser/types.js';
import type { Config } from './config/schema.js';
import type { ControlPlane } from './control-plane/types.js';
import { ExecutionError } from './domain/errors.js';
import { s3Location } from './domain/input-files.js';
import type { LiveRelay } from './live/types.js';
import type { Specification } from './domain/specification.js';
import { createAnthropicModel } from './model/anthropic-client.js';
import { createRecordingModel } from './model/recording-client.js';
import { createReplayModel } from './model/replay-client.js';
import { chooseActionSpace } from './model/tool-versions.js';
import type { ModelClient, RecordingFile } from './model/types.js';
import { createFfmpegRecorder } from './recorder/ffmpeg-recorder.js';
import type { VideoRecorder } from './recorder/types.js';
import type { RunnerDeps, TokenPricing } from './runner/types.js';
import { createLocalStore } from './storage/local-store.js';
import { createS3ObjectReader } from './storage/s3-object-reader.js';
import { createS3Store } from './storage/s3-store.js';
import type { ArtifactStore } from './storage/types.js';
import type { Logger } from './telemetry/types.js';
import { createActionSpace } from './toolset/create.js';

/**
 * Approximate list prices (USD per million tokens) of Sonnet-class models, for the estimated
 * cost in output.json. An estimate, not an invoice.
 */
export const SONNET_PRICING: TokenPricing = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

export function createArtifactStore(config: Config, logger: Logger): ArtifactStore & { close?(): void } {
  if (config.S3_BUCKET) {
    return createS3Store({
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      prefix: config.S3_PREFIX,
      logger,
      ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
      ...(config.ARTIFACT_BASE_URL ? { publicBaseUrl: config.ARTIFACT_BASE_URL } : {}),
    });
  }
  return createLocalStore({ dir: config.ARTIFACTS_DIR, prefix: config.S3_PREFIX, ...(config.ARTIFACT_BASE_URL ? { publicBaseUrl: config.ARTIFACT_BASE_URL } : {}) });
}

export function createBrowser(config: Config, logger: Logger): BrowserSandbox {
  return createPlaywrightSandbox({
    logger: logger.child({ component: 'browser' }),
    ...(config.CHROMIUM_PATH ? { chromiumPath: config.CHROMIUM_PATH } : {}),
    ...(config.BROWSER_HOST_RULES ? { hostRules: config.BROWSER_HOST_RULES } : {}),
  });
}

export function createRecorder(config: Config, logger: Logger): VideoRecorder | undefined {
  if (!config.VIDEO_ENABLED) return undefined;
  return createFfmpegRecorder({
    fps: config.VIDEO_FPS,
    crf: config.VIDEO_CRF,
    logger: logger.child({ component: 'recorder' }),
    ...(config.FFMPEG_PATH ? { ffmpegPath: config.FFMPEG_PATH } : {}),
  });
}

/** The model of each execution: Claude, or a recording replayed; always recorded. */
export function modelFactory(config: Config, logger: Logger, replay?: RecordingFile): RunnerDeps['createModel'] {
  const live: ModelClient | undefined = replay
    ? undefined
    : createAnthropicModel({
        maxRetries: config.ANTHROPIC_MAX_RETRIES,
        logger,
        ...(config.ANTHROPIC_API_KEY ? { apiKey: config.ANTHROPIC_API_KEY } : {}),
        ...(config.ANTHROPIC_BASE_URL ? { baseURL: config.ANTHROPIC_BASE_URL } : {}),
        ...(config.ANTHROPIC_MODEL_CAPABILITIES ? { capabilityOverrides: config.ANTHROPIC_MODEL_CAPABILITIES } : {}),
      });
  return ({ modelId, toolVersion, display }) => {
    // A replay gets a fresh cursor per execution; the live client is shared.
    const inner = replay ? createReplayModel(replay) : live!;
    const recorded = createRecordingModel(inner, { model: modelId, toolVersion, display });
    return { client: recorded, recording: () => recorded.recording() };
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
 * Opens input files (contract §12): s3:// with the worker's S3 settings (the standard
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

export function createRunnerDeps(options: {
  config: Config;
  logger: Logger;
  browser: BrowserSandbox;
  store: ArtifactStore;
  recorder?: VideoRecorder;
  controlPlane?: ControlPlane;
  replay?: RecordingFile;
  observe?: RunnerDeps['observe'];
  /** Replaces the default input file opener (tests give S3 credentials this way). */
  openInputFile?: RunnerDeps['openInputFile'];
  /** Where versions' run caches are kept (the daemon's Redis); none for the one-shot CLI. */
  runCache?: RunnerDeps['runCache'];
  live?: LiveRelay;
}): RunnerDeps {
  const { config, logger } = options;
  return {
    browser: options.browser,
    store: options.store,
    ...(options.recorder ? { recorder: options.recorder } : {}),
    ...(options.controlPlane ? { controlPlane: options.controlPlane } : {}),
    ...(options.observe ? { observe: options.observe } : {}),
    ...(options.live ? { live: options.live } : {}),
    createModel: modelFactory(config, logger, options.replay),
    chooseActionSpace: (modelId, requested) => {
      const chosen = chooseActionSpace(modelId, requested);
      if (!chosen.ok) return chosen;
      const { tools } = chosen;
      return { ok: true, choice: { kind: chosen.kind, computer: tools.computer, images: tools.images } };
    },
    createActionSpace,
    checkSpecification,
    checkFileUrl,
    openInputFile: options.openInputFile ?? inputFileOpener(config, logger),
    logger,
    ...(options.runCache ? { runCache: options.runCache } : {}),
    settings: {
      runCache: config.RUN_CACHE === 'on',
      defaultModel: config.ANTHROPIC_MODEL,
      maxSteps: config.MAX_STEPS,
      timeoutMs: config.EXECUTION_TIMEOUT_MS,
      viewport: { width: config.VIEWPORT_WIDTH, height: config.VIEWPORT_HEIGHT },
      workDir: config.WORK_DIR,
      stepScreenshots: config.STEP_SCREENSHOTS,
      secrets: [config.API_KEY, config.ANTHROPIC_API_KEY].filter((s): s is string => typeof s === 'string' && s.length > 0),
      pricing: SONNET_PRICING,
      downloadMaxBytes: config.DOWNLOAD_MAX_BYTES,
      inputFileMaxBytes: config.INPUT_FILE_MAX_BYTES,
      inputFileTimeoutMs: config.INPUT_FILE_TIMEOUT_MS,
      inputFileBuckets: config.INPUT_FILE_BUCKETS,
    },
  };
}
