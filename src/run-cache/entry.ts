/**
 * A version's cache entry (docs/run-cache.md#what-it-holds): read and checked before a run, and
 * built from a completed run's steps after it.
 */
import type { InputSource } from '../domain/input-references.js';
import { pathId, type KeyPath } from '../contract/key-path.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { EARLIER_RUN_CACHE_FORMATS, pageShape, parseCacheEntry } from './format.js';
import { SETS_VALUE } from './actions.js';
import { bindAction, sourcePaths } from './sources.js';
import type { RunCacheStore } from './types.js';
import { inputDigests, inputLeaves, tieAction } from './values.js';
import type { CacheReport } from '../contract/output.js';
import { RUN_CACHE_FORMAT, type CachedAction, type RunCacheEntry } from '../contract/run-cache.js';

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
  const earlier = typeof format === 'string' ? EARLIER_RUN_CACHE_FORMATS.get(format) : undefined;
  if (earlier) report.reason = `the cached run is of an earlier format (${String(format)}) that ${earlier}: it is not replayed`;
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
  /** The run's input as the model saw it (secrets as their names), and the secrets' names. */
  input: Pick<InputSource, 'maskedPayload' | 'paths'>;
  /** Input paths the pages no longer ask for, as repairs found (the entry's notAsked); those a step enters by name are asked again. */
  notAsked?: readonly KeyPath[];
  now: () => number;
  /** The version's own text (its prompt and steps): what a constant of the version is found in. */
  constants?: string;
  /** What the run's repairs changed, and which of its steps a repair made. */
  repairs?: RunCacheEntry['repairs'];
  byRepair?: (step: ActionTrace[]) => boolean;
}

/** The completed run as the version's cache: its steps with what each depends on in the input, and the input's digests. */
export function buildEntry(options: BuildOptions): RunCacheEntry {
  const leaves = inputLeaves(options.input);
  const ctx = { input: options.input, leaves, salt: options.fingerprint };
  const sourceCtx = { payload: options.input.maskedPayload, leaves, constants: options.constants ?? '' };
  const steps = options.steps
    .map((step) =>
      'cached' in step
        ? step.cached
        : step.map((trace): CachedAction => {
            const repaired = options.byRepair?.(step) === true;
            const action = trace.toolsetName ? trace.tool : String(trace.input.action ?? trace.tool);
            // Each value it entered bound to its source, where it has exactly one (sources.ts); the rest is guarded.
            const { input, sources } = bindAction({ action, input: withoutRefs(trace.input), ...(trace.target ? { target: trace.target } : {}) }, sourceCtx, SETS_VALUE.has(action));
            const bound = { keys: new Set(sources.filter((b) => b.at !== 'target').map((b) => b.at)), target: sources.some((b) => b.at === 'target') };
            const tied = tieAction({ action, input, ...(trace.target ? { target: trace.target } : {}), ...(trace.focus ? { focus: trace.focus } : {}) }, ctx, bound);
            return {
              tool: trace.tool,
              ...(trace.toolsetName ? { toolsetName: trace.toolsetName } : {}),
              input,
              ...(sources.length > 0 ? { sources } : {}),
              ...(repaired ? { byRepair: true } : {}),
              page: pageShape(trace.url),
              // The browser's ElementIdentity is of the cached element's shape (a copy, as the entry keeps it).
              ...(trace.target ? { target: { ...trace.target } } : {}),
              ...(trace.focus ? { focus: { ...trace.focus } } : {}),
              ...(tied.refs.length > 0 ? { refs: tied.refs } : {}),
              ...(tied.guard ? { guard: tied.guard } : {}),
              ...(trace.effect ? { effect: structuredClone(trace.effect) } : {}),
            };
          }),
    )
    .filter((step) => step.length > 0);
  const entered = new Set(steps.flat().flatMap((action) => [...(action.refs ?? []), ...sourcePaths(action.sources)]).map(pathId));
  const notAsked = [...new Map((options.notAsked ?? []).filter((path) => !entered.has(pathId(path))).map((path) => [pathId(path), [...path]])).values()];
  return {
    format: RUN_CACHE_FORMAT,
    versionId: options.versionId,
    fingerprint: options.fingerprint,
    toolType: options.toolType,
    createdAt: new Date(options.now()).toISOString(),
    sourceExecutionId: options.executionId,
    steps,
    input: inputDigests(leaves, options.fingerprint),
    ...(notAsked.length > 0 ? { notAsked } : {}),
    ...(options.repairs && options.repairs.length > 0 ? { repairs: options.repairs } : {}),
  };
}

/** A reference is of its own page and run: the cache keeps the element's identity instead. */
function withoutRefs(input: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(input);
  const target = copy.target as { type?: string } | undefined;
  if (target && target.type === 'ref') copy.target = { type: 'ref' };
  return copy;
}
