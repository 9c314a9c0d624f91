/**
 * A version's cache entry (docs/run-cache.md#what-it-holds): read and checked before a run, and
 * built from a completed run's steps after it.
 */
import {
  EARLIER_RUN_CACHE_FORMATS,
  RUN_CACHE_FORMAT,
  pageShape,
  parseCacheEntry,
  type CachedAction,
  type CachedElement,
  type RunCacheEntry,
} from './format.js';
import { tieAction, type InputLeaf } from './values.js';
import type { CacheReport } from '../domain/run-cache.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { outputSources } from './page-output.js';
import type { PageReader, RunCacheStore } from './types.js';

/** A step of the run as it goes: the actions it ran, or a cached step the replay did not need to run. */
export type RunStep = ActionTrace[] | { cached: CachedAction[] };

export interface EntryKey {
  versionId: string;
  /** What in the specification shapes the run, and the action space's tool type. */
  fingerprint: string;
  toolType: string;
}

/** The version's cache entry when this run may replay it; otherwise undefined, with the reason in the report. */
export async function loadEntry(store: RunCacheStore, key: EntryKey, report: CacheReport, logger: Logger, signal: AbortSignal): Promise<RunCacheEntry | undefined> {
  const { versionId, fingerprint, toolType } = key;
  let raw: unknown;
  try {
    raw = await store.get(versionId, signal);
  } catch (error) {
    logger.warn({ err: error instanceof Error ? error.message : String(error), versionId }, 'the run cache could not be read; running with the model');
    report.reason = 'the cache could not be read';
    return undefined;
  }
  if (raw === undefined) {
    report.reason = 'no cached run of this version yet';
    return undefined;
  }
  const entry = parseCacheEntry(raw);
  const format = (raw as { format?: unknown } | null)?.format;
  if (typeof format === 'string' && EARLIER_RUN_CACHE_FORMATS.includes(format)) report.reason = `the cached run is of an earlier format (${format}) that may hold input values as literals: it is not replayed`;
  else if (!entry || entry.versionId !== versionId) report.reason = 'the cached run is not readable';
  else if (entry.fingerprint !== fingerprint) report.reason = 'the cached run was made for another specification';
  else if (entry.toolType !== toolType) report.reason = `the cached run used ${entry.toolType}, this run ${toolType}`;
  else if (entry.steps.length === 0) report.reason = 'the cached run has no steps';
  else return entry;
  return undefined;
}

export interface BuildOptions extends EntryKey {
  executionId: string;
  steps: RunStep[];
  values: InputLeaf[];
  specText: string;
  output: unknown;
  /** The final page, where the output's values are looked for. */
  page: PageReader | undefined;
  now: () => number;
  signal: AbortSignal;
}

/** The completed run as the version's cache: its steps, their values tied to the input, and where its output was read. */
export async function buildEntry(options: BuildOptions): Promise<RunCacheEntry> {
  const { values } = options;
  const ctx = { leaves: values, specText: options.specText, salt: options.fingerprint };
  const steps = options.steps
    .map((step) =>
      'cached' in step
        ? step.cached
        : step.map((trace): CachedAction => {
            const action = trace.toolsetName ? trace.tool : String(trace.input.action ?? trace.tool);
            const tied = tieAction(
              { action, input: withoutRefs(trace.input), ...(trace.target ? { target: { ...trace.target } } : {}), ...(trace.focus ? { focus: { ...trace.focus } } : {}) },
              ctx,
            );
            return {
              tool: trace.tool,
              ...(trace.toolsetName ? { toolsetName: trace.toolsetName } : {}),
              input: tied.input,
              page: pageShape(trace.url),
              ...(tied.target ? { target: tied.target as unknown as CachedElement } : {}),
              ...(tied.focus ? { focus: tied.focus as unknown as CachedElement } : {}),
              ...(tied.guard ? { guard: tied.guard } : {}),
            };
          }),
    )
    .filter((step) => step.length > 0);
  const output = await outputSources(options.page, options.output, values, options.signal);
  return {
    format: RUN_CACHE_FORMAT,
    versionId: options.versionId,
    fingerprint: options.fingerprint,
    toolType: options.toolType,
    createdAt: new Date(options.now()).toISOString(),
    sourceExecutionId: options.executionId,
    steps,
    ...(output ? { output } : {}),
  };
}

/** A reference is of its own page and run: the cache keeps the element's identity instead. */
function withoutRefs(input: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(input);
  const target = copy.target as { type?: string } | undefined;
  if (target && target.type === 'ref') copy.target = { type: 'ref' };
  return copy;
}
