/**
 * `output.json` (docs/counters-and-artifacts.md#outputjson): what a run ended with, its counters
 * and usage, the files it kept, what the run cache did, the questions it asked a person and its
 * browser profile. The worker writes it; the CLI prints it; the dashboard and an operator read it.
 */
import { z } from 'zod';
import { ERROR_CODES } from './errors.js';
import { HUMAN_KINDS } from './human.js';
import { count, isoTime } from './json.js';
import { profileReport } from './profile.js';
import { tokenUsage } from './recording.js';
import { counters } from './reports.js';

/** One file a page downloaded and the worker kept (docs/files-and-codes.md#downloads). */
export const savedDownload = z.object({
  name: z.string(),
  /** Where the page downloaded it from. */
  url: z.string(),
  bytes: count,
  sha256: z.string(),
  contentType: z.string(),
  /** The stored artifact (`downloads/{name}`): its reported url, null when it could not be stored. */
  artifactUrl: z.string().nullable(),
});
export type SavedDownload = z.infer<typeof savedDownload>;

/** What the run cache did (docs/run-cache.md#what-it-reports). */
export const cacheReport = z.object({
  used: z.boolean(),
  /** Steps of the run replayed from the cache: cached steps, and the part of one before a stop or after a resume. */
  replayedSteps: count,
  /** Steps taken with the model: a repair's requests and a take-over's. */
  modelSteps: count,
  /** Cached steps the model redid one by one before the replay went on (docs/run-cache.md#repair-not-restart). */
  repairedSteps: count,
  /** The cached step (1-based) at which the model took the rest of the run over; null when it did not. */
  fallbackAtStep: z.number().int().min(1).nullable(),
  reason: z.string().nullable(),
  /** The check of the final page after a replay that ran every step: whether it ran, and its verdict (null when it did not run). */
  finalCheck: z.object({ ran: z.boolean(), matches: z.boolean().nullable(), reason: z.string().nullable() }),
});
export type CacheReport = z.infer<typeof cacheReport>;

/** One question the agent asked a person, and the answer (docs/human-in-the-loop.md). */
export const humanExchange = z.object({
  kind: z.enum(HUMAN_KINDS),
  question: z.string(),
  choices: z.array(z.string()).nullable(),
  /** null while unanswered (a run that ended waiting). */
  answer: z.string().nullable(),
  by: z.string().nullable(),
  askedAt: isoTime,
  answeredAt: isoTime.nullable(),
});
export type HumanExchange = z.infer<typeof humanExchange>;

/** Where a model's prices came from (docs/model.md#prices): the worker's table, MODEL_PRICES, or neither (the fallback). */
export const PRICE_SOURCES = ['table', 'configured', 'fallback'] as const;
export type PriceSource = (typeof PRICE_SOURCES)[number];

/** What the requests to one model used and cost (`usage.byModel`). */
export const modelUsage = tokenUsage.extend({
  model: z.string(),
  requests: count,
  /** Estimated, at that model's prices, rounded to 6 decimals. */
  costUsd: z.number().min(0),
  /** `fallback` once any request was priced as a model nobody priced. */
  prices: z.enum(PRICE_SOURCES),
});
export type ModelUsageReport = z.infer<typeof modelUsage>;

/** A run's model usage and what it cost (docs/counters-and-artifacts.md#outputjson), also on the last line of logs.jsonl. */
export const usageReport = tokenUsage.extend({
  /** Each request at its own model's prices, rounded to 6 decimals; null only in documents written before prices per model. */
  estimatedCostUsd: z.number().min(0).nullable(),
  /** Tokens as the API bills them: input, output, cache reads and cache writes together (what a token budget counts). */
  billedTokens: count,
  /** By model, in the order the models were first asked. */
  byModel: z.array(modelUsage),
});
export type UsageReport = z.infer<typeof usageReport>;

/** The run's caps (docs/specification.md#budget); null where it had none. */
export const budgetReport = z.object({ tokens: z.number().int().min(1).nullable(), usd: z.number().positive().nullable() });
export type BudgetReport = z.infer<typeof budgetReport>;

/**
 * The run played a recording back instead of calling a model (docs/counters-and-artifacts.md#playback):
 * which recording, and why. Absent when a model was called.
 */
export const playbackReport = z.object({
  /** The recording's file name. */
  recording: z.string(),
  /** Why it was played back, in words (`ANTHROPIC_API_KEY is not set …`, `--replay was given`). */
  reason: z.string(),
});
export type PlaybackReport = z.infer<typeof playbackReport>;

/**
 * A limit something a page made reached (docs/security.md#limits), as its `resource_limit_reached`
 * event told it: `VIDEO_MAX_BYTES` with `stopped` means the video ends before the run did.
 */
export const limitReport = z.object({
  limit: z.string(),
  max: count,
  value: count,
  unit: z.enum(['bytes', 'chars', 'tabs', 'entries']),
  action: z.enum(['cut', 'closed', 'stopped', 'ended']),
  detail: z.string().optional(),
});
export type LimitReport = z.infer<typeof limitReport>;

export const outputDocument = z.object({
  status: z.enum(['completed', 'failed']),
  /** The agent's output (checked against the specification's outputSchema); null for a failed run. */
  output: z.unknown(),
  error: z.object({ code: z.enum(ERROR_CODES), message: z.string() }).nullable(),
  counters: counters.extend({ durationMs: count }),
  usage: usageReport,
  budget: budgetReport,
  /** Files the pages downloaded and the worker kept. */
  downloads: z.array(savedDownload),
  cache: cacheReport,
  human: z.array(humanExchange),
  /** The run's browser profile (docs/profiles.md); only when the specification names one. */
  profile: profileReport.optional(),
  /** Set when the run played a recording back instead of calling a model. */
  playback: playbackReport.optional(),
  /** The limits the run's pages reached, each once, in order; absent when none was. */
  limits: z.array(limitReport).optional(),
});
export type OutputDocument = z.infer<typeof outputDocument>;
