/**
 * An execution with its workflow version's run cache (docs/run-cache.md): replay what the cache holds
 * while the pages match, let the model take over where they do not, read the output from the
 * page where the cached run read it, and leave the run that completed as the next cache.
 *
 *   no cache (or off)   → the model runs the task; a completed run becomes the cache
 *   replay, all steps   → the output re-read from the page: no model call; one if it cannot be
 *   replay, stopped     → the model continues from there with a summary of what was done
 *
 * The runner sees one function; the entry (entry.ts) and the page reads of the output
 * (page-output.ts, through the page reader port) stay inside this folder.
 */
import { runAgent, type AgentDeps, type AgentInput, type AgentOutcome, type RunStats } from '../agent/loop.js';
import { openStartPage } from '../agent/start-page.js';
import type { CacheReport } from '../domain/run-cache.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { buildEntry, loadEntry, type EntryKey, type RunStep } from './entry.js';
import { cacheFingerprint, type RunCacheEntry } from './format.js';
import { pageTextFor, readOutput } from './page-output.js';
import { replaySteps, type ReplayResult } from './replay.js';
import type { RunCacheStore } from './types.js';
import { inputLeaves } from './values.js';

export interface CachedRunOptions {
  /** Absent when the cache is off (RUN_CACHE=off, `cache: false`, no version to key it by). */
  store?: RunCacheStore;
  versionId?: string;
  executionId: string;
  agentDeps: AgentDeps;
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
  /** The agent's deps, with the traces of the model's steps collected when the run is kept. */
  deps: AgentDeps;
  /** Replayed and skipped steps, in order; the model's steps follow at the end. */
  steps: RunStep[];
  modelSteps: Map<number, ActionTrace[]>;
}

export async function runWithCache(options: CachedRunOptions): Promise<CachedRunResult> {
  const run = startRecording(options);
  const entry = run.key ? await loadEntry(run.key.store, run.key, run.report, options.logger, options.agentInput.signal) : undefined;
  const outcome = entry ? await replayThenAgent(run, entry) : await runAgent(run.deps, options.agentInput, options.stats);
  run.report.modelSteps = options.stats.nSteps - run.report.replayedSteps;
  for (const [, traces] of [...run.modelSteps.entries()].sort((a, b) => a[0] - b[0])) run.steps.push(traces);
  if (run.key && outcome.status === 'completed' && (run.report.modelSteps > 0 || !entry) && (options.keep?.() ?? true)) await save(run, run.key, outcome.output);
  options.agentDeps.events.emit('run_cache', { ...run.report });
  return { outcome, cache: run.report };
}

function startRecording(options: CachedRunOptions): Recording {
  const { store, versionId, agentDeps, agentInput } = options;
  const toolType = agentDeps.space.toolType;
  const key = store && versionId ? { store, versionId, toolType, fingerprint: cacheFingerprint(agentInput.spec, toolType) } : undefined;
  const modelSteps = new Map<number, ActionTrace[]>();
  // Without a store or a version nothing keeps the run: the actions skip their traces' page reads.
  const deps: AgentDeps = key
    ? {
        ...agentDeps,
        onTrace: (step, trace) => {
          if (!modelSteps.has(step)) modelSteps.set(step, []);
          modelSteps.get(step)!.push(trace);
        },
      }
    : agentDeps;
  const report: CacheReport = { used: false, replayedSteps: 0, modelSteps: 0, fallbackAtStep: null, reason: null };
  return { options, ...(key ? { key } : {}), report, deps, steps: [], modelSteps };
}

/** The cached steps replayed from the start page; the model takes over where they stop, or to read the output. */
async function replayThenAgent(run: Recording, entry: RunCacheEntry): Promise<AgentOutcome> {
  const { agentDeps, agentInput, stats } = run.options;
  const { session, space, events } = agentDeps;
  const { report } = run;
  report.used = true;
  await openStartPage(session, agentInput.startUrl, events, agentInput.signal);
  const replay = await replaySteps(
    { space, session, events, ...(agentDeps.onAction ? { onAction: agentDeps.onAction } : {}), ...(agentDeps.now ? { now: agentDeps.now } : {}) },
    { steps: entry.steps, maskedInput: agentInput.vault.maskedPayload, secretPaths: agentInput.vault.paths, salt: entry.fingerprint, maxSteps: agentInput.maxSteps, signal: agentInput.signal },
    stats,
  );
  report.replayedSteps = replay.replayed;
  // Steps the page was already past stay in the next cache as they were.
  run.steps.push(...replay.skipped.map((cached) => ({ cached })), ...replay.traces);
  if (replay.skipped.length > 0) report.reason = `the replay started at step ${replay.skipped.length + 1}: the page was already past the steps before it`;
  const takeOver = (done: string) => runAgent(run.deps, { ...agentInput, resume: { done: agentInput.vault.redact(done), steps: replay.replayed } }, stats);
  if (replay.stopped) {
    report.fallbackAtStep = replay.stopped.atStep;
    report.reason = replay.stopped.reason;
    return takeOver(summary(replay, `The replay stopped at step ${replay.stopped.atStep}: ${replay.stopped.reason}.`));
  }
  const page = session.tab();
  const read = entry.output ? await readOutput(page, entry.output, agentInput) : { ok: false as const, reason: 'the cached run left no way to read its output from the page' };
  if (read.ok) {
    events.emit('finish', { status: 'completed', by: 'cache' });
    return { status: 'completed', output: read.output };
  }
  report.reason = `${report.reason ? `${report.reason}; ` : ''}output: ${read.reason}`;
  const pageText = await pageTextFor(page, agentInput.vault.redact, agentInput.signal);
  // Labels come from the page: the text the model reads is redacted as a whole.
  return takeOver(summary(replay, `Every step of the task was replayed. Read the output from the page and call finish.${pageText ? `\nThe page's text:\n${pageText}` : ''}`));
}

/** The completed run as the version's new cache; a store that fails is logged, the run stands. */
async function save(run: Recording, kept: NonNullable<Recording['key']>, output: unknown): Promise<void> {
  const { agentDeps, agentInput, executionId, logger, now } = run.options;
  const { store, ...key } = kept;
  const specText = [agentInput.spec.prompt, ...(agentInput.spec.steps ?? [])].join('\n');
  const values = inputLeaves(agentInput.vault.maskedPayload);
  const next = await buildEntry({ ...key, executionId, steps: run.steps, values, specText, output, page: agentDeps.session.tab(), now, signal: agentInput.signal });
  try {
    // What is stored passes the secrets' redaction once more: a page can show a secret anywhere.
    await store.put(key.versionId, agentInput.vault.redactValue(next));
    agentDeps.events.emit('run_cache_saved', { versionId: key.versionId, steps: next.steps.length, actions: next.steps.flat().length, outputSources: next.output?.sources.length ?? 0 });
  } catch (error) {
    logger.warn({ err: error instanceof Error ? error.message : String(error), versionId: key.versionId }, 'the run cache could not be saved');
  }
}

/** Replayed steps listed one by one, at most; more are counted. */
const SUMMARY_STEPS = 6;

/**
 * What the model is told when it takes over: how many steps were replayed and the last few of
 * them, each on one line, then why the replay stopped. Short: the page itself follows.
 */
function summary(replay: ReplayResult, why: string): string {
  if (replay.done.length === 0) return `Nothing could be replayed from the earlier run of this workflow.\n${why}`;
  const count = replay.done.reduce((sum, labels) => sum + labels.length, 0);
  const shown = replay.done.slice(-SUMMARY_STEPS);
  const first = replay.done.length - shown.length;
  const lines = shown.map((labels, i) => `${first + i + 1}. ${labels.join('; ') || '(reads only)'}`);
  const earlier = first > 0 ? `(steps 1–${first} not listed)\n` : '';
  return `${count} actions were replayed from an earlier run of this workflow, on this input, step by step:\n${earlier}${lines.join('\n')}\n${why}`;
}
