/**
 * An execution with its workflow version's run cache (docs/run-cache.md): replay what the cache holds
 * while the pages match and the input allows, let the model redo a step where they do not and
 * resume the replay after it, check the final page of a replay that ran to its end, and leave the
 * run that completed as the next cache.
 *
 *   no cache (or off)   → the model runs the task; a completed run becomes the cache
 *   replay, all steps   → one model request checks the final page against the input and reads
 *                         the output; a "no" hands the run to the model there
 *   replay, stopped     → the model repairs that step (repair.ts), and the replay resumes where
 *                         the page matches the cached run again (resume.ts)
 *   repair, no way back → the model continues from there with a summary of what was done
 *
 * The runner sees one function. This folder uses the agent's loop and ports; the agent knows
 * nothing of the cache.
 */
import { runAgent } from '../agent/loop.js';
import type { AgentDeps, AgentInput } from '../agent/types.js';
import { openStartPage } from '../agent/start-page.js';
import { placeholderOf, placeholdersIn } from '../domain/input-references.js';
import { pathId, valueAt, type KeyPath } from '../contract/key-path.js';
import { emptyCacheReport } from '../domain/run-cache.js';
import type { ExecutionEventSource } from '../execution/events.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import { actionOf, afterLastEntry, SKIPPED, type ActionAt } from './actions.js';
import { buildEntry, loadEntry, type EntryKey, type RunStep } from './entry.js';
import { checkFinalPage } from './final-check.js';
import { cacheFingerprint } from './format.js';
import { describeAction, isEnterable } from './precondition.js';
import { REPAIR_MODEL_STEPS, repairStep, type RepairOutcome } from './repair.js';
import { replaySteps, type ReadBack, type ReplayInput, type ReplayStop, type StopKind } from './replay.js';
import { piecesNotEntered, sourcePaths, type MissingPiece } from './sources.js';
import type { RunCacheStore } from './types.js';
import { changedPaths, guardMiss, inputLeaves } from './values.js';
import type { AgentOutcome } from '../execution/outcome.js';
import type { RunCounters } from '../execution/counters.js';
import type { CacheReport } from '../contract/output.js';
import type { CachedAction, RunCacheEntry } from '../contract/run-cache.js';

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
  /** The run's counters, heard on `agentDeps.events` (a step's number, the step cap). */
  stats: RunCounters;
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
  /** Input paths the pages no longer ask for: the entry's, and those this run's repairs found. */
  notAsked: KeyPath[];
  /** What this run's repairs changed, for the next entry (docs/api.md#run-cache). */
  repairs: NonNullable<RunCacheEntry['repairs']>;
  /** The steps a repair made. */
  repaired: Set<ActionTrace[]>;
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
  return { options, ...(key ? { key } : {}), report: emptyCacheReport(), steps: [], modelSteps, stopTracing, notAsked: [], repairs: [], repaired: new Set() };
}

/** How a replay that stopped goes on: the model repairs the step, or takes the run over. */
const REPAIRABLE = new Set<StopKind>(['absent', 'failed', 'not_held', 'guard', 'no_value', 'hand_over']);

/**
 * The cached steps replayed from the start page; a step whose page changed repaired by the model
 * and the replay resumed where the page matches the earlier run again; then the final check, or
 * the model where a repair does not lead back (docs/run-cache.md#repair-not-restart).
 */
async function replayThenAgent(run: Recording, entry: RunCacheEntry): Promise<AgentOutcome> {
  const { agentDeps, agentInput, stats } = run.options;
  const { session, space, events } = agentDeps;
  const { report } = run;
  const { vault } = agentInput;
  report.used = true;
  await openStartPage(session, agentInput.startUrl, events, agentInput.signal);
  const leaves = inputLeaves(vault);
  const salt = entry.fingerprint;
  run.notAsked.push(...(entry.notAsked ?? []));
  const changed = changedPaths(entry.input, leaves, salt);
  const unentered = neverEntered(entry, changed);
  const deps = { space, session, events, ...(agentDeps.now ? { now: agentDeps.now } : {}) };
  const progress: Progress = { done: [], reasons: [], notEntered: [], readBacks: [], pieces: piecesNotEntered(entry.steps.flat(), vault.maskedPayload) };
  let handOver: ReplayInput['handOver'] = unentered.length > 0 ? { ...afterLastEntry(entry.steps), reason: unenteredReason(unentered) } : undefined;
  let from: ActionAt | undefined;
  /** Model steps spent on repairs of each cached action: a repair that comes back to the same one goes on with what is left. */
  const spent = new Map<string, number>();
  const repaired = new Set<number>();
  for (;;) {
    const replay = await replaySteps(deps, { steps: entry.steps, input: vault, leaves, salt, changed, maxSteps: agentInput.maxSteps, signal: agentInput.signal, ...(handOver ? { handOver } : {}), ...(from ? { from } : {}) }, stats);
    report.replayedSteps += replay.replayed;
    // Steps the page was already past stay in the next cache as they were.
    run.steps.push(...replay.skipped.map((cached) => ({ cached })), ...replay.traces);
    progress.done.push(...replay.done);
    progress.readBacks.push(...replay.readBacks);
    progress.pieces.push(...replay.piecesSkipped);
    if (replay.skipped.length > 0) progress.reasons.push(`the replay started at step ${replay.skipped.length + 1}: the page was already past the steps before it`);
    const stop = replay.stopped;
    if (!stop) break;
    const key = `${stop.at.step}/${stop.at.action}`;
    const budget = REPAIR_MODEL_STEPS - (spent.get(key) ?? 0);
    if (!REPAIRABLE.has(stop.kind) || budget <= 0) return takeOver(run, progress, stop, handOver ? unentered : []);
    const mode = stop.kind === 'hand_over' ? 'insert' : 'replace';
    const stopped = entry.steps[stop.at.step]?.[stop.at.action];
    const required = mode === 'insert' ? unentered : (stopped?.refs ?? []).filter((path) => isEnterable(valueAt(vault.maskedPayload, path)));
    const repair = await repairStep(
      { ...deps, model: agentDeps.model },
      {
        steps: entry.steps,
        stop,
        mode,
        unentered,
        recent: progress.done.flat().slice(-3),
        guardFails: (cached) => (cached.guard ? guardMiss(cached.guard, leaves, salt, changed) : undefined),
        agent: agentInput,
        leaves,
        salt,
        changed,
        required,
        budget,
      },
      stats,
    );
    spent.set(key, (spent.get(key) ?? 0) + repair.turns);
    run.steps.push(...repair.traces);
    if (repair.labels.length > 0) progress.done.push(repair.labels.map((label) => `${label} (repair)`));
    const resumedAt = repair.resume?.kind === 'at' ? repair.resume.at : undefined;
    const standIn = mode === 'insert' ? [] : actionsBetween(entry.steps, stop.at, resumedAt);
    if (repair.turns > 0) {
      run.repairs.push({ cachedStep: stop.atStep, reason: stop.reason, before: standIn.map(({ cached }) => describeAction(cached)), after: [...repair.labels] });
      for (const traces of repair.traces) run.repaired.add(traces);
      events.emit('step_repair', {
        step: stats.nSteps,
        cachedStep: stop.atStep,
        reason: stop.reason,
        before: standIn.map(({ cached }) => describeAction(cached)),
        after: repair.labels,
        outcome: repair.outcome,
        modelSteps: repair.turns,
        resumedAtStep: resumedAt ? resumedAt.step + 1 : null,
        ...(repair.note ? { note: repair.note } : {}),
        ...(repair.notEntered.length > 0 ? { notEntered: repair.notEntered.map(placeholderOf) } : {}),
      });
    }
    if (repair.outcome !== 'resumed') return takeOver(run, progress, stop, handOver ? unentered : [], repair);
    repaired.add(stop.at.step);
    report.repairedSteps = repaired.size;
    progress.reasons.push(`step ${stop.atStep} was repaired: ${stop.reason}`);
    progress.notEntered.push(...repair.notEntered, ...passedOver(standIn, repair.traces.flat()));
    // Only what the model said the pages no longer ask for, having seen them, is kept as such.
    run.notAsked.push(...repair.notEntered);
    if (mode === 'insert') handOver = undefined;
    if (repair.resume?.kind === 'end') break;
    from = resumedAt;
  }
  report.reason = progress.reasons.join('; ') || null;
  const check = await checkFinalPage({ ...agentDeps, model: run.options.checkModel ?? agentDeps.model }, agentInput, summary(progress, ''), stats, { readBacks: progress.readBacks, pieces: progress.pieces });
  report.finalCheck = check.report;
  if (check.ok) {
    events.emit('finish', { status: 'completed', by: 'cache' });
    return { status: 'completed', output: check.output };
  }
  report.reason = [...progress.reasons, check.why].join('; ');
  return runAgent(agentDeps, { ...agentInput, resume: { done: vault.redact(summary(progress, `Every step was replayed, but ${check.why}. Make the page show the task done with this input, then call finish.`)), steps: report.replayedSteps } }, stats);
}

/** What the replay and its repairs did so far, for the model that checks or takes over. */
interface Progress {
  /** Labels of the actions done, by step of the run (a repair's marked as such). */
  done: string[][];
  /** Why the replay started later, which steps were repaired and why. */
  reasons: string[];
  /** Input paths a step of the earlier run entered that this run did not: the page no longer asked for them. */
  notEntered: KeyPath[];
  /** Values the replay entered, read back from their fields: the final check's evidence. */
  readBacks: ReadBack[];
  /** Pieces of values entered one by one that this run did not enter (docs/run-cache.md#sources). */
  pieces: MissingPiece[];
}

/** The model carries the rest of the run from where the replay stopped, told what was done and why. */
function takeOver(run: Recording, progress: Progress, stop: ReplayStop, unentered: readonly KeyPath[], repair?: RepairOutcome): Promise<AgentOutcome> {
  const { agentDeps, agentInput, stats } = run.options;
  const { report } = run;
  const { atStep, reason, next } = stop;
  report.fallbackAtStep = atStep;
  const repairNote = repair
    ? repair.outcome === 'flow_changed'
      ? ` A model asked to redo that step found that the flow has changed: ${repair.note ?? ''}`.trimEnd()
      : ` A model asked to redo that step did not lead back to the earlier run's steps: ${repair.note ?? ''}`.trimEnd()
    : '';
  report.reason = [...progress.reasons, `${reason}${repair ? (repair.outcome === 'flow_changed' ? `; the flow has changed: ${repair.note ?? ''}` : `; the repair did not lead back: ${repair.note ?? ''}`) : ''}`].join('; ');
  const enter = unentered.length > 0 ? `\nThe earlier run never entered ${unentered.map(placeholderOf).join(', ')}, and this input's ${unentered.length === 1 ? 'value differs' : 'values differ'} from its: enter ${unentered.length === 1 ? 'it' : 'them'} by name before the task is done.` : '';
  const why = `The replay stopped at step ${atStep}: ${reason}.${next ? ` The earlier run's next action there was: ${next}.` : ''}${repairNote ? `${repairNote.replace(/[\s.]+$/, '')}.` : ''}${enter}`;
  return runAgent(agentDeps, { ...agentInput, resume: { done: agentInput.vault.redact(summary(progress, why)), steps: report.replayedSteps } }, stats);
}

/** The cached actions from `from` up to `to` (the end of the run when absent), reads and waits left out. */
function actionsBetween(steps: readonly CachedAction[][], from: ActionAt, to: ActionAt | undefined): Array<{ at: ActionAt; cached: CachedAction }> {
  const out: Array<{ at: ActionAt; cached: CachedAction }> = [];
  for (let s = from.step; s < steps.length; s++) {
    for (let a = s === from.step ? from.action : 0; a < steps[s]!.length; a++) {
      if (to && (s > to.step || (s === to.step && a >= to.action))) return out;
      const cached = steps[s]![a]!;
      if (!SKIPPED.has(actionOf(cached))) out.push({ at: { step: s, action: a }, cached });
    }
  }
  return out;
}

/** Input paths the actions a repair stood in for entered by name, and the repair did not. */
function passedOver(standIn: ReadonlyArray<{ cached: CachedAction }>, done: readonly ActionTrace[]): KeyPath[] {
  const entered = new Set(done.flatMap((trace) => ['value', 'text'].flatMap((key) => (typeof trace.input[key] === 'string' ? placeholdersIn(trace.input[key] as string).map((ph) => pathId(ph.path)) : []))));
  const out = new Map<string, KeyPath>();
  for (const { cached } of standIn) for (const path of cached.refs ?? []) if (!entered.has(pathId(path))) out.set(pathId(path), path);
  return [...out.values()];
}

/** Input paths whose value changed that no cached step entered by reference (and the pages still ask for): the replay cannot enter them. */
function neverEntered(entry: RunCacheEntry, changed: readonly KeyPath[]): KeyPath[] {
  const entered = new Set([...entry.steps.flat().flatMap((action) => [...(action.refs ?? []), ...sourcePaths(action.sources)]), ...(entry.notAsked ?? [])].map(pathId));
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
  const constants = [agentInput.spec.prompt, ...(agentInput.spec.steps ?? [])].join('\n');
  const next = buildEntry({ ...key, executionId, steps: run.steps, input: agentInput.vault, notAsked: run.notAsked, now, constants, repairs: run.repairs, byRepair: (step) => run.repaired.has(step) });
  try {
    // What is stored passes the secrets' redaction once more: a page can show a secret anywhere.
    // Its identity is the job's, not page text (the Redis key holds the version id already): a
    // version id that begins like a secret ("redmine-…") would otherwise never match on reading.
    const { versionId, fingerprint, toolType, sourceExecutionId } = next;
    await store.put(key.versionId, { ...agentInput.vault.redactValue(next), versionId, fingerprint, toolType, sourceExecutionId });
    agentDeps.events.emit('run_cache_saved', { versionId: key.versionId, steps: next.steps.length, actions: next.steps.flat().length });
  } catch (error) {
    logger.warn({ err: error instanceof Error ? error.message : String(error), versionId: key.versionId }, 'the run cache could not be saved');
  }
}

/** Replayed steps listed one by one, at most; more are counted. */
const SUMMARY_STEPS = 6;

/**
 * What the model is told when it takes over (or the final check, of what was done): how many
 * actions were replayed and the last few steps, each on one line (a repair's marked), the values
 * the run did not enter because the page no longer asked for them, then why it stopped. Short:
 * the page itself follows.
 */
function summary(progress: Progress, why: string): string {
  const tail = why ? `\n${why}` : '';
  const { done } = progress;
  if (done.length === 0) return `Nothing could be replayed from the earlier run of this workflow.${tail}`;
  const count = done.reduce((sum, labels) => sum + labels.length, 0);
  const shown = done.slice(-SUMMARY_STEPS);
  const first = done.length - shown.length;
  const lines = shown.map((labels, i) => `${first + i + 1}. ${labels.join('; ') || '(reads only)'}`);
  const earlier = first > 0 ? `(steps 1–${first} not listed)\n` : '';
  const repaired = done.some((labels) => labels.some((label) => label.endsWith(' (repair)'))) ? ' (those marked "repair" by a model redoing a step whose page had changed)' : '';
  const names = [...new Set(progress.notEntered.map(placeholderOf))];
  const skipped = names.length > 0 ? `\nThe replay did not enter ${names.join(', ')}: the earlier run entered ${names.length === 1 ? 'it' : 'them'} on a page this run did not show (a repair passed over it).` : '';
  return `${count} actions were replayed from an earlier run of this workflow, on this input, step by step${repaired}:\n${earlier}${lines.join('\n')}${skipped}${tail}`;
}
