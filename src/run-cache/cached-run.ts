/**
 * An execution with its workflow version's run cache (docs/run-cache.md): replay what the cache holds
 * while the pages match and the input allows, let the model take over where they do not, check
 * the final page of a replay that ran to its end, and leave the run that completed as the next cache.
 *
 *   no cache (or off)   → the model runs the task; a completed run becomes the cache
 *   replay, all steps   → one model request checks the final page against the input and reads
 *                         the output; a "no" hands the run to the model there
 *   replay, stopped     → the model continues from there with a summary of what was done
 *
 * The runner sees one function. This folder uses the agent's loop and ports; the agent knows
 * nothing of the cache.
 */
import { runAgent, type AgentDeps, type AgentInput, type AgentOutcome, type RunStats } from '../agent/loop.js';
import { openStartPage } from '../agent/start-page.js';
import { placeholderOf } from '../domain/input-references.js';
import { pathId, type KeyPath } from '../domain/key-path.js';
import { emptyCacheReport, type CacheReport } from '../domain/run-cache.js';
import type { ExecutionEventSource } from '../runner/events.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { afterLastEntry } from './actions.js';
import { buildEntry, loadEntry, type EntryKey, type RunStep } from './entry.js';
import { checkFinalPage } from './final-check.js';
import { cacheFingerprint, type RunCacheEntry } from './format.js';
import { replaySteps, type ReplayInput, type ReplayResult } from './replay.js';
import type { RunCacheStore } from './types.js';
import { changedPaths, inputLeaves } from './values.js';

export interface CachedRunOptions {
  /** Absent when the cache is off (RUN_CACHE=off, `cache: false`, no version to key it by). */
  store?: RunCacheStore;
  versionId?: string;
  executionId: string;
  /** The agent's deps; their event stream is heard too (the traces of the model's actions, when the run is kept). */
  agentDeps: AgentDeps & { events: Pick<ExecutionEventSource, 'on'> };
  /** The model client for the final check, when it must differ from the agent's (no step pictures: the check is no step). */
  checkModel?: AgentDeps['model'];
  agentInput: AgentInput;
  /** Whether a completed run may become the version's cache (not one that asked a person: they must decide again). */
  keep?: () => boolean;
  stats: RunStats;
  logger: Logger;
  now: () => number;
}

export interface CachedRunResult {
  outcome: AgentOutcome;
  cache: CacheReport;
}

/** One cached run as it goes: the cache's key, its report, and the steps the next cache will hold. */
interface Recording {
  options: CachedRunOptions;
  /** Present when something keeps the run (a store and a version). */
  key?: EntryKey & { store: RunCacheStore };
  report: CacheReport;
  /** Replayed and skipped steps, in order; the model's steps follow at the end. */
  steps: RunStep[];
  /** The traces of the model's steps, heard while the run may be kept. */
  modelSteps: Map<number, ActionTrace[]>;
  /** Stops hearing them. */
  stopTracing: () => void;
}

export async function runWithCache(options: CachedRunOptions): Promise<CachedRunResult> {
  const run = startRecording(options);
  const entry = run.key ? await loadEntry(run.key.store, run.key, run.report, options.logger, options.agentInput.signal) : undefined;
  const outcome = entry ? await replayThenAgent(run, entry) : await runAgent(options.agentDeps, options.agentInput, options.stats);
  // A run that throws skips this: the subscription goes with the execution's stream.
  run.stopTracing();
  run.report.modelSteps = options.stats.nSteps - run.report.replayedSteps;
  for (const [, traces] of [...run.modelSteps.entries()].sort((a, b) => a[0] - b[0])) run.steps.push(traces);
  if (run.key && outcome.status === 'completed' && (run.report.modelSteps > 0 || !entry) && (options.keep?.() ?? true)) await save(run, run.key);
  options.agentDeps.events.emit('run_cache', { ...run.report });
  return { outcome, cache: run.report };
}

function startRecording(options: CachedRunOptions): Recording {
  const { store, versionId, agentDeps, agentInput } = options;
  const toolType = agentDeps.space.toolType;
  const key = store && versionId ? { store, versionId, toolType, fingerprint: cacheFingerprint(agentInput.spec, toolType) } : undefined;
  const modelSteps = new Map<number, ActionTrace[]>();
  // Without a store or a version nothing keeps the run: nothing hears the traces, and the
  // actions skip their page reads.
  const stopTracing = key
    ? agentDeps.events.on('action_trace', ({ step, trace }) => {
        if (!modelSteps.has(step)) modelSteps.set(step, []);
        modelSteps.get(step)!.push(trace);
      })
    : () => undefined;
  return { options, ...(key ? { key } : {}), report: emptyCacheReport(), steps: [], modelSteps, stopTracing };
}

/** The cached steps replayed from the start page; then the final check, or the model where the replay stops. */
async function replayThenAgent(run: Recording, entry: RunCacheEntry): Promise<AgentOutcome> {
  const { agentDeps, agentInput, stats } = run.options;
  const { session, space, events } = agentDeps;
  const { report } = run;
  const { vault } = agentInput;
  report.used = true;
  await openStartPage(session, agentInput.startUrl, events, agentInput.signal);
  const leaves = inputLeaves(vault);
  const unentered = neverEntered(entry, changedPaths(entry.input, leaves, entry.fingerprint));
  const replayInput: ReplayInput = {
    steps: entry.steps,
    input: vault,
    leaves,
    salt: entry.fingerprint,
    maxSteps: agentInput.maxSteps,
    ...(unentered.length > 0 ? { handOver: { ...afterLastEntry(entry.steps), reason: unenteredReason(unentered) } } : {}),
    signal: agentInput.signal,
  };
  const replay = await replaySteps(
    { space, session, events, ...(agentDeps.now ? { now: agentDeps.now } : {}) },
    replayInput,
    stats,
  );
  report.replayedSteps = replay.replayed;
  // Steps the page was already past stay in the next cache as they were.
  run.steps.push(...replay.skipped.map((cached) => ({ cached })), ...replay.traces);
  if (replay.skipped.length > 0) report.reason = `the replay started at step ${replay.skipped.length + 1}: the page was already past the steps before it`;
  const takeOver = (done: string) => runAgent(agentDeps, { ...agentInput, resume: { done: vault.redact(done), steps: replay.replayed } }, stats);
  if (replay.stopped) {
    const { atStep, reason, next } = replay.stopped;
    report.fallbackAtStep = atStep;
    report.reason = reason;
    const enter = unentered.length > 0 ? `\nThe earlier run never entered ${unentered.map(placeholderOf).join(', ')}, and this input's ${unentered.length === 1 ? 'value differs' : 'values differ'} from its: enter ${unentered.length === 1 ? 'it' : 'them'} by name before the task is done.` : '';
    return takeOver(summary(replay, `The replay stopped at step ${atStep}: ${reason}.${next ? ` The earlier run's next action there was: ${next}.` : ''}${enter}`));
  }
  const check = await checkFinalPage({ ...agentDeps, model: run.options.checkModel ?? agentDeps.model }, agentInput, summary(replay, ''), stats);
  report.finalCheck = check.report;
  if (check.ok) {
    events.emit('finish', { status: 'completed', by: 'cache' });
    return { status: 'completed', output: check.output };
  }
  report.reason = check.why;
  return takeOver(summary(replay, `Every step was replayed, but ${check.why}. Make the page show the task done with this input, then call finish.`));
}

/** Input paths whose value changed that no cached step entered by reference: the replay cannot enter them. */
function neverEntered(entry: RunCacheEntry, changed: readonly KeyPath[]): KeyPath[] {
  const entered = new Set(entry.steps.flat().flatMap((action) => action.refs ?? []).map(pathId));
  return changed.filter((path) => !entered.has(pathId(path)));
}

function unenteredReason(paths: readonly KeyPath[]): string {
  const names = paths.map(placeholderOf).join(', ');
  return paths.length === 1 ? `the input's ${names} differs from the earlier run's, which never entered it` : `the input's ${names} differ from the earlier run's, which never entered them`;
}

/** The completed run as the version's new cache; a store that fails is logged, the run stands. */
async function save(run: Recording, kept: NonNullable<Recording['key']>): Promise<void> {
  const { agentDeps, agentInput, executionId, logger, now } = run.options;
  const { store, ...key } = kept;
  const next = buildEntry({ ...key, executionId, steps: run.steps, input: agentInput.vault, now });
  try {
    // What is stored passes the secrets' redaction once more: a page can show a secret anywhere.
    await store.put(key.versionId, agentInput.vault.redactValue(next));
    agentDeps.events.emit('run_cache_saved', { versionId: key.versionId, steps: next.steps.length, actions: next.steps.flat().length });
  } catch (error) {
    logger.warn({ err: error instanceof Error ? error.message : String(error), versionId: key.versionId }, 'the run cache could not be saved');
  }
}

/** Replayed steps listed one by one, at most; more are counted. */
const SUMMARY_STEPS = 6;

/**
 * What the model is told when it takes over (or the final check, of what was done): how many
 * steps were replayed and the last few of them, each on one line, then why the replay stopped.
 * Short: the page itself follows.
 */
function summary(replay: ReplayResult, why: string): string {
  const tail = why ? `\n${why}` : '';
  if (replay.done.length === 0) return `Nothing could be replayed from the earlier run of this workflow.${tail}`;
  const count = replay.done.reduce((sum, labels) => sum + labels.length, 0);
  const shown = replay.done.slice(-SUMMARY_STEPS);
  const first = replay.done.length - shown.length;
  const lines = shown.map((labels, i) => `${first + i + 1}. ${labels.join('; ') || '(reads only)'}`);
  const earlier = first > 0 ? `(steps 1–${first} not listed)\n` : '';
  return `${count} actions were replayed from an earlier run of this workflow, on this input, step by step:\n${earlier}${lines.join('\n')}${tail}`;
}
