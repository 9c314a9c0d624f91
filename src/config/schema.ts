import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { parseHostRules } from '../browser/host-rules.js';
import { DEFAULT_PAGE_LIMITS } from '../browser/page-limits.js';
import { parseRedisAddress } from '../domain/redis-address.js';
import { parseProfileKeys, type ProfileKeyring } from '../domain/profile-crypto.js';
import { ConfigError, bool, int, optionalString, optionalUrl, parseEnvironment } from './env.js';
import { TRACING_SECRET_VARIABLES, tracingSettingsSchema } from './tracing.js';

/**
 * Every setting of the worker, read from the environment once at start (docs/configuration.md).
 * Durations are milliseconds and end in `Ms`. Each field: one line of doc, then its default.
 */

/** One model's capabilities as an operator states them (docs/model.md#how-a-new-model-is-picked-up). */
const capabilityFields = z
  .object({
    clearToolUses: z.boolean(),
    compact: z.boolean(),
    adaptiveThinking: z.boolean(),
    maxInputTokens: z.number().int().min(1_000),
    taskBudget: z.boolean(),
  })
  .partial()
  .strict();

/** A variable holding JSON; empty or unset is undefined. */
const jsonText = z
  .string()
  .trim()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === '') return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(v) as unknown;
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `must be JSON: ${(error as Error).message}` });
      return z.NEVER;
    }
    // JSON keeps a `__proto__` key, which a copy into a record drops without a word: refused instead.
    if (/"__proto__"\s*:/.test(v) && JSON.stringify(parsed).includes('"__proto__"')) {
      ctx.addIssue({ code: 'custom', message: 'a key named __proto__ is not accepted' });
      return z.NEVER;
    }
    return parsed;
  });

/** `{"model id" | "*": {clearToolUses?, compact?, adaptiveThinking?, maxInputTokens?, taskBudget?}}`, as JSON. */
const capabilityOverrides = jsonText.pipe(z.record(z.string().min(1), capabilityFields).optional());

/** One model's prices, USD per million tokens (docs/model.md#prices). */
const priceFields = z
  .object({
    inputPerMTok: z.number().min(0).max(100_000),
    outputPerMTok: z.number().min(0).max(100_000),
    cacheReadPerMTok: z.number().min(0).max(100_000),
    cacheWritePerMTok: z.number().min(0).max(100_000),
  })
  .strict();

/** `{"model id, family or *": {inputPerMTok, outputPerMTok, cacheReadPerMTok, cacheWritePerMTok}}`, as JSON. */
const priceOverrides = jsonText.pipe(z.record(z.string().trim().min(1), priceFields).optional());

/** A positive amount of dollars, written as digits with an optional decimal part. */
const usd = z
  .string()
  .trim()
  .regex(/^\d+(\.\d+)?$/, 'must be a positive amount of dollars, such as 2 or 0.50')
  .transform(Number)
  .pipe(z.number().positive('must be more than 0').max(1_000_000, 'must be at most 1000000'));

/** Bits a second as ffmpeg writes them: digits with an optional `k` (thousand) or `M` (million). */
const bitrate = z
  .string()
  .trim()
  .regex(/^\d+(\.\d+)?[kKmM]?$/, 'must be bits a second, such as 2M, 500k or 2000000')
  .transform((v) => Math.round(parseFloat(v) * ({ k: 1e3, m: 1e6 }[v.slice(-1).toLowerCase()] ?? 1)))
  .pipe(z.number().min(100_000, 'must be at least 100k').max(100_000_000, 'must be at most 100M'));

/** The newest Sonnet the browser use tool's documentation lists (Sonnet 5.5 is not on it). */
export const DEFAULT_MODEL = 'claude-sonnet-5';

export const configSchema = z.object({
  /** Redis holding the queue: `redis://`, `rediss://`, or `redis+sentinel://hosts/primary-name` (`rediss+sentinel://` over TLS) (docs/configuration.md#redis). */
  REDIS_URL: z
    .string()
    .trim()
    .superRefine((value, ctx) => {
      try {
        parseRedisAddress(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    })
    .default('redis://127.0.0.1:6379'),
  /** BullMQ queue the executions arrive on. */
  EXECUTION_QUEUE: z.string().trim().min(1).default('executions'),
  /** BullMQ key prefix. */
  QUEUE_PREFIX: z.string().trim().min(1).default('bull'),
  /** Executions run at once by one worker process (they share one Chromium). */
  WORKER_CONCURRENCY: int(1, 64).default(2),
  /** A new execution is taken only while the worker's process tree stays under this with one more (MB; 0: no limit; docs/operations.md#admission-by-capacity). */
  WORKER_MAX_MEMORY_MB: int(0, 1_048_576).default(0),
  /** A new execution is taken only while the memory left on the machine or container stays above this with one more (MB; 0: no floor). */
  WORKER_MIN_FREE_MEMORY_MB: int(0, 1_048_576).default(0),
  /** The memory one more execution is expected to need, for the two settings above (MB). */
  WORKER_EXECUTION_MEMORY_MB: int(1, 65_536).default(300),
  /** The operator's API (`{base_url}` of the service description). */
  API_BASE_URL: optionalUrl(['http:', 'https:']),
  /** Sent as `X-Service-Key` on every API call. Secret. */
  API_KEY: optionalString,
  /** Claude API key. Secret. */
  ANTHROPIC_API_KEY: optionalString,
  /** Claude API endpoint (a replaying server in tests). */
  ANTHROPIC_BASE_URL: optionalUrl(['http:', 'https:']),
  /** Model used when the specification names none. */
  ANTHROPIC_MODEL: z.string().trim().min(1).default(DEFAULT_MODEL),
  /** Retries of one model call on connection errors, timeouts, 408, 409, 429 and 5xx before `model_error`. */
  ANTHROPIC_MAX_RETRIES: int(0, 20).default(4),
  /** Model capabilities stated by the operator (JSON by model id or `*`) instead of asking the Models API; unset: ask it. */
  ANTHROPIC_MODEL_CAPABILITIES: capabilityOverrides,
  /** Prices of models the worker's table does not know, or new prices of those it does (JSON by model id, family or `*`; docs/model.md#prices). */
  MODEL_PRICES: priceOverrides,
  /** A run's cap on model tokens (as billed: input, output, cache reads and writes) when the specification sets none; unset: no cap. */
  RUN_BUDGET_TOKENS: int(1, 1_000_000_000_000).optional(),
  /** A run's cap on the estimated cost of its model tokens, in USD, when the specification sets none; unset: no cap. */
  RUN_BUDGET_USD: usd.optional(),
  /** Cap on agent steps when the specification sets none. */
  MAX_STEPS: int(1, 10_000).default(50),
  /** Cap on a run's wall time when the specification sets none. */
  EXECUTION_TIMEOUT_MS: int(1_000, 86_400_000).default(900_000),
  /** How long a run may wait for a person when its specification does not say; 0: no asking (docs/human-in-the-loop.md). */
  HUMAN_TIMEOUT_MS: int(0, 30 * 86_400_000).default(0),
  /** On SIGTERM/SIGINT, how long running executions may go on before they are stopped. */
  SHUTDOWN_GRACE_MS: int(0, 86_400_000).default(30_000),
  /** How long a job lock lives without renewal: a dead worker's run is found lost after it. */
  QUEUE_LOCK_DURATION_MS: int(1_000, 3_600_000).default(30_000),
  /** How often a worker looks for runs of dead workers (stalled jobs). */
  QUEUE_STALLED_INTERVAL_MS: int(500, 3_600_000).default(15_000),
  /** Pause between upload attempts of artifacts kept locally after a storage outage. */
  UPLOAD_RETRY_INTERVAL_MS: int(100, 3_600_000).default(30_000),
  /** S3 bucket for artifacts; empty stores them under ARTIFACTS_DIR. */
  S3_BUCKET: optionalString,
  /** S3-compatible endpoint (MinIO, s3rver); empty uses AWS. */
  S3_ENDPOINT: optionalUrl(['http:', 'https:']),
  /** S3 region. */
  S3_REGION: z.string().trim().min(1).default('us-east-1'),
  /** Path-style S3 addressing (needed by most S3-compatible servers). */
  S3_FORCE_PATH_STYLE: bool.default(false),
  /** Prefix of every artifact key, e.g. `prod/`. */
  S3_PREFIX: z
    .string()
    .trim()
    .default('')
    .transform((prefix) => (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`)),
  /** Local artifact folder when S3_BUCKET is empty. */
  ARTIFACTS_DIR: z.string().trim().min(1).default(path.resolve('artifacts')),
  /** Public base of artifact urls: reported url = this + key. */
  ARTIFACT_BASE_URL: optionalUrl(['http:', 'https:']),
  /** Chromium binary; empty tries Debian's headless shell, then its Chromium, then Playwright's own download. */
  CHROMIUM_PATH: optionalString,
  /** ffmpeg binary; empty tries the system's. */
  FFMPEG_PATH: optionalString,
  /** Chromium `--host-resolver-rules` for development and tests (never widens the allow-list). */
  BROWSER_HOST_RULES: optionalString.superRefine((text, ctx) => {
    // Parsed at start like every variable, so a bad rule is one line, not an exception later.
    try {
      parseHostRules(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error instanceof Error ? error.message : String(error)).replace(/^BROWSER_HOST_RULES: /, '') });
    }
  }),
  /** Port of /healthz, /readyz and /metrics; 0 disables the server. */
  HEALTH_PORT: int(0, 65_535).default(0),
  /** pino level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Viewport width = the display declared to the model. */
  VIEWPORT_WIDTH: int(320, 3840).default(1280),
  /** Viewport height. */
  VIEWPORT_HEIGHT: int(240, 2160).default(800),
  /** Replay workflow versions' earlier runs without the model while their pages match (docs/run-cache.md); `off` turns it off. */
  RUN_CACHE: z.enum(['on', 'off'], { message: 'must be "on" or "off"' }).default('on'),
  /** How long a version's run cache is kept after it was last written or read. */
  RUN_CACHE_TTL_MS: int(60_000, 365 * 86_400_000).default(30 * 86_400_000),
  /** Record `video.mp4` of each execution. */
  VIDEO_ENABLED: bool.default(true),
  /** Video frames a second at most; a frame lasts until the picture changes (variable rate). */
  VIDEO_FPS: int(1, 30).default(10),
  /** H.264 CRF (lower is better quality, bigger files). */
  VIDEO_CRF: int(0, 51).default(30),
  /**
   * `shared`: warm encoders kept between executions, each execution's MP4 cut from their stream
   * (docs/operations.md#shared-video-encoder). `per-execution`: one ffmpeg per execution.
   */
  VIDEO_ENCODER: z.enum(['per-execution', 'shared'], { message: 'must be "per-execution" or "shared"' }).default('shared'),
  /** The video encoder's bitrate ceiling (bits a second, `2M`, `500k` or digits); past it x264 lowers those frames' quality. */
  VIDEO_MAX_BITRATE: bitrate.default(2_000_000),
  /** Largest `video.mp4` (bytes): past it the recording ends, the file stays playable and the run goes on. */
  VIDEO_MAX_BYTES: int(1_024, 100 * 1024 ** 3).default(300 * 1024 ** 2),
  /** Pages one execution may have open at once; a popup past it is closed as it appears and the agent is told. */
  BROWSER_TABS_MAX: int(1, 100).default(DEFAULT_PAGE_LIMITS.tabsMax),
  /** A console line or page error kept at most this long (characters): cut where it is captured. */
  CONSOLE_LINE_MAX_CHARS: int(100, 1_000_000).default(DEFAULT_PAGE_LIMITS.consoleLineMaxChars),
  /** Console entries kept per tab between two reads (the oldest go first). */
  CONSOLE_ENTRIES_MAX: int(10, 100_000).default(DEFAULT_PAGE_LIMITS.consoleEntriesMax),
  /** Console bytes one execution keeps across its tabs (UTF-8); past it new lines are dropped and counted. */
  CONSOLE_BYTES_MAX: int(1_024, 1024 ** 3).default(DEFAULT_PAGE_LIMITS.consoleBytesMax),
  /** Largest download kept (bytes); a bigger one is cancelled and reported failed. */
  DOWNLOAD_MAX_BYTES: int(1, 10 * 1024 ** 3).default(100 * 1024 ** 2),
  /**
   * What an execution's pages may hold in the browser (bytes: their scripts' heap, the DOM's, their
   * buffers), sampled each second; past it the execution ends with resource_limit. 0: off.
   */
  BROWSER_MEMORY_MAX_BYTES: int(0, 64 * 1024 ** 3).default(2 * 1024 ** 3),
  /**
   * What an execution may write to its scratch folder (bytes: downloads, video, screenshots, logs;
   * not its input files), sampled each second; past it the execution ends with resource_limit. 0: off.
   */
  SCRATCH_DISK_MAX_BYTES: int(0, 1024 ** 4).default(1024 ** 3),
  /** Largest input file fetched (bytes); a bigger one fails the execution with invalid_input. */
  INPUT_FILE_MAX_BYTES: int(1, 10 * 1024 ** 3).default(100 * 1024 ** 2),
  /** How long fetching one input file may take before the execution fails with invalid_input. */
  INPUT_FILE_TIMEOUT_MS: int(1_000, 3_600_000).default(120_000),
  /** Buckets s3:// input files may come from (comma-separated); empty refuses s3:// input files. */
  INPUT_FILE_BUCKETS: z
    .string()
    .trim()
    .default('')
    .transform((v) => v.split(',').map((b) => b.trim()).filter((b) => b !== '')),
  /** Keep the screenshot the model saw at each step as an artifact (`steps/NNN.jpg`). */
  STEP_SCREENSHOTS: bool.default(true),
  /**
   * Browser profiles' keys (docs/profiles.md), `keyId:base64key[,…]`, 32-byte keys: the first
   * encrypts, all decrypt. Secret. Empty: a specification with `profile` is refused.
   */
  PROFILE_KEYS: z
    .string()
    .optional()
    .transform((text, ctx): ProfileKeyring | undefined => {
      if (text === undefined || text.trim() === '') return undefined;
      try {
        return parseProfileKeys(text);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    }),
  /** Largest browser profile state saved (bytes, before encryption); a bigger one is not saved. */
  PROFILE_MAX_BYTES: int(1_024, 1024 ** 3).default(5 * 1024 ** 2),
  /** Local scratch folder for artifacts being made and uploads not yet done. */
  WORK_DIR: z.string().trim().min(1).default(path.join(os.tmpdir(), 'execution-worker')),
  /** The standard OpenTelemetry variables (config/tracing.ts, docs/configuration.md#traces). */
  ...tracingSettingsSchema.shape,
});

export type Config = z.output<typeof configSchema>;

/**
 * How the worker's variables are read: the values of those holding keys are never repeated in an
 * error, and an empty S3_PREFIX is a value of its own (no prefix), not "use the default".
 */
export const WORKER_VARIABLES = { secret: new Set(['API_KEY', 'ANTHROPIC_API_KEY', 'PROFILE_KEYS', ...TRACING_SECRET_VARIABLES]), emptyIsValue: new Set(['S3_PREFIX']) } as const;

/** Parses the environment; throws one ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseEnvironment(configSchema, env, WORKER_VARIABLES);
}

/** Settings the daemon cannot run without (the one-shot CLI needs neither). */
export function requireDaemonSettings(config: Config): void {
  const missing = (['API_BASE_URL', 'API_KEY'] as const).filter((k) => !config[k]);
  if (missing.length > 0) {
    throw new ConfigError(`invalid configuration:\n${missing.map((k) => `  ${k}: is required by the daemon`).join('\n')}`);
  }
}
