/**
 * An execution with its workflow version's run cache (docs/run-cache.md): replay what the cache holds
 * while the pages match, let the model take over where they do not, read the output from the
 * page where the cached run read it, and leave the run that completed as the next cache.
 *
 *   no cache (or off)   → the model runs the task; a completed run becomes the cache
 *   replay, all steps   → the output re-read from the page: no model call; one if it cannot be
 *   replay, stopped     → the model continues from there with a summary of what was done
 */
import { replaySteps, type ReplayResult } from '../agent/replay.js';
import { runAgent, type AgentDeps, type AgentInput, type AgentOutcome, type RunStats } from '../agent/loop.js';
import type { BrowserSession } from '../browser/types.js';
import { ExecutionError } from '../domain/errors.js';
import {
  EARLIER_RUN_CACHE_FORMATS,
  RUN_CACHE_FORMAT,
  cacheFingerprint,
  pageShape,
  parseCacheEntry,
  type CacheReport,
  type CachedAction,
  type CachedElement,
  type OutputSource,
  type RunCacheEntry,
} from '../domain/run-cache.js';
import { fillText, inputLeaves, templateText, tieAction, type InputLeaf } from '../domain/run-cache-values.js';
import type { Logger } from '../telemetry/types.js';
import type { ActionTrace } from '../toolset/types.js';
import type { RunCacheStore } from './types.js';

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

/** Longest output value searched for on the final page, and how many places are considered. */
const OUTPUT_VALUE_MAX_CHARS = 500;

export async function runWithCache(options: CachedRunOptions): Promise<CachedRunResult> {
  const { store, versionId, agentDeps, agentInput, stats, logger } = options;
  const { session, space, events } = agentDeps;
  const toolType = space.toolType;
  const fingerprint = cacheFingerprint(agentInput.spec, toolType);
  const report: CacheReport = { used: false, replayedSteps: 0, modelSteps: 0, fallbackAtStep: null, reason: null };
  const values = inputLeaves(agentInput.vault.maskedPayload);
  /** The run as it goes, step by step: what the next cache will hold. */
  const steps: RunStep[] = [];
  const modelSteps = new Map<number, ActionTrace[]>();
  // Without a store or a version nothing keeps the run: the actions skip their traces' page reads.
  const deps: AgentDeps =
    store && versionId
      ? {
          ...agentDeps,
          onTrace: (step, trace) => {
            if (!modelSteps.has(step)) modelSteps.set(step, []);
            modelSteps.get(step)!.push(trace);
          },
        }
      : agentDeps;

  const entry = store && versionId ? await load(store, versionId, fingerprint, toolType, report, logger, agentInput.signal) : undefined;
  let outcome: AgentOutcome;
  if (!entry) {
    outcome = await runAgent(deps, agentInput, stats);
  } else {
    report.used = true;
    const opened = await session.navigate(agentInput.startUrl, agentInput.signal);
    events.emit('navigation', { url: agentInput.startUrl, ok: opened.ok, reason: opened.error, by: 'worker' });
    if (!opened.ok) throw new ExecutionError('browser_error', `could not open the start page ${agentInput.startUrl}: ${opened.error ?? 'unknown error'}`);
    const replay = await replaySteps(
      { space, session, events, ...(agentDeps.onAction ? { onAction: agentDeps.onAction } : {}), ...(agentDeps.now ? { now: agentDeps.now } : {}) },
      { steps: entry.steps, maskedInput: agentInput.vault.maskedPayload, secretPaths: agentInput.vault.paths, salt: entry.fingerprint, maxSteps: agentInput.maxSteps, signal: agentInput.signal },
      stats,
    );
    report.replayedSteps = replay.replayed;
    // Steps the page was already past stay in the next cache as they were.
    steps.push(...replay.skipped.map((cached) => ({ cached })), ...replay.traces);
    if (replay.skipped.length > 0) report.reason = `the replay started at step ${replay.skipped.length + 1}: the page was already past the steps before it`;
    if (replay.stopped) {
      report.fallbackAtStep = replay.stopped.atStep;
      report.reason = replay.stopped.reason;
      outcome = await runAgent(deps, { ...agentInput, resume: { done: agentInput.vault.redact(summary(replay, `The replay stopped at step ${replay.stopped.atStep}: ${replay.stopped.reason}.`)), steps: replay.replayed } }, stats);
    } else {
      const read = entry.output ? await readOutput(session, entry.output, agentInput) : { ok: false as const, reason: 'the cached run left no way to read its output from the page' };
      if (read.ok) {
        events.emit('finish', { status: 'completed', by: 'cache' });
        outcome = { status: 'completed', output: read.output };
      } else {
        report.reason = `${report.reason ? `${report.reason}; ` : ''}output: ${read.reason}`;
        const pageText = await pageTextFor(session, agentInput.vault.redact, agentInput.signal);
        // Labels come from the page: the text the model reads is redacted as a whole.
        const done = agentInput.vault.redact(summary(replay, `Every step of the task was replayed. Read the output from the page and call finish.${pageText ? `\nThe page's text:\n${pageText}` : ''}`));
        outcome = await runAgent(deps, { ...agentInput, resume: { done, steps: replay.replayed } }, stats);
      }
    }
  }
  report.modelSteps = stats.nSteps - report.replayedSteps;
  for (const [, traces] of [...modelSteps.entries()].sort((a, b) => a[0] - b[0])) steps.push(traces);

  if (store && versionId && outcome.status === 'completed' && (report.modelSteps > 0 || !entry) && (options.keep?.() ?? true)) {
    const specText = [agentInput.spec.prompt, ...(agentInput.spec.steps ?? [])].join('\n');
    const next = await buildEntry({ versionId, fingerprint, toolType, executionId: options.executionId, steps, values, specText, output: outcome.output, session, now: options.now, signal: agentInput.signal });
    try {
      // What is stored passes the secrets' redaction once more: a page can show a secret anywhere.
      await store.put(versionId, agentInput.vault.redactValue(next));
      events.emit('run_cache_saved', { versionId, steps: next.steps.length, actions: next.steps.flat().length, outputSources: next.output?.sources.length ?? 0 });
    } catch (error) {
      logger.warn({ err: error instanceof Error ? error.message : String(error), versionId }, 'the run cache could not be saved');
    }
  }
  events.emit('run_cache', { ...report });
  return { outcome, cache: report };
}

async function load(store: RunCacheStore, versionId: string, fingerprint: string, toolType: string, report: CacheReport, logger: Logger, signal: AbortSignal): Promise<RunCacheEntry | undefined> {
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

async function pageTextFor(session: BrowserSession, redact: (text: string) => string, signal: AbortSignal): Promise<string> {
  const page = await session.tab()?.pageText(10_000, signal).catch(() => undefined);
  return page ? redact(page.text) : '';
}

interface BuildOptions {
  versionId: string;
  fingerprint: string;
  toolType: string;
  executionId: string;
  steps: RunStep[];
  values: InputLeaf[];
  specText: string;
  output: unknown;
  session: BrowserSession;
  now: () => number;
  signal: AbortSignal;
}

/** A step of the run as it goes: the actions it ran, or a cached step the replay did not need to run. */
type RunStep = ActionTrace[] | { cached: CachedAction[] };

/** The completed run as the version's cache: its steps, their values tied to the input, and where its output was read. */
async function buildEntry(options: BuildOptions): Promise<RunCacheEntry> {
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
  const output = await outputSources(options.session, options.output, values, options.signal);
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

/** Where each value of the output shows on the final page; undefined when one cannot be found. */
async function outputSources(session: BrowserSession, output: unknown, values: InputLeaf[], signal: AbortSignal): Promise<RunCacheEntry['output']> {
  const tab = session.tab();
  if (!tab) return undefined;
  const leaves: Array<{ path: string; value: string | number }> = [];
  let readable = true;
  const walk = (value: unknown, path: string[]) => {
    if (typeof value === 'string' || typeof value === 'number') leaves.push({ path: path.join('.'), value });
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    // true, false and null are not read from a page: this output needs the model.
    else readable = false;
  };
  walk(output, []);
  if (!readable || leaves.length === 0) return undefined;
  const sources: OutputSource[] = [];
  for (const leaf of leaves) {
    const text = String(leaf.value);
    if (text.length === 0 || text.length > OUTPUT_VALUE_MAX_CHARS) return undefined;
    const [found] = await tab.findText(text, 3, signal).catch(() => []);
    if (!found) return undefined;
    const at = found.text.indexOf(text);
    sources.push({
      path: leaf.path,
      kind: typeof leaf.value === 'number' ? 'number' : 'string',
      element: { ...found.identity, name: '' },
      before: templateText(found.text.slice(Math.max(0, at - 40), at), values),
      after: templateText(found.text.slice(at + text.length, at + text.length + 40), values),
    });
  }
  return { sources, shape: skeleton(output) };
}

/** The output with every leaf emptied: the shape the new values are put into. */
function skeleton(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(skeleton);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, skeleton(v)]));
  return null;
}

/** The output re-read from the final page where the cached run found it, validated; or why not. */
async function readOutput(session: BrowserSession, recipe: NonNullable<RunCacheEntry['output']>, input: AgentInput): Promise<{ ok: true; output: unknown } | { ok: false; reason: string }> {
  const tab = session.tab();
  if (!tab) return { ok: false, reason: 'no open tab' };
  const output = structuredClone(recipe.shape);
  for (const source of recipe.sources) {
    const text = await tab.readText(source.element, input.signal);
    if (text === null) return { ok: false, reason: `the ${source.element.role} the output ${source.path} was read from is not on the page` };
    const before = fillText(source.before, input.vault.maskedPayload, input.vault.paths);
    const after = fillText(source.after, input.vault.maskedPayload, input.vault.paths);
    const start = before ? text.indexOf(before) : 0;
    if (start < 0) return { ok: false, reason: `the text around ${source.path} changed` };
    const from = start + before.length;
    const end = after ? text.indexOf(after, from) : text.length;
    if (end < 0) return { ok: false, reason: `the text around ${source.path} changed` };
    const raw = text.slice(from, end).trim();
    if (raw === '') return { ok: false, reason: `no value for ${source.path}` };
    const value = source.kind === 'number' ? Number(raw.replace(/[^\d.+-eE]/g, '')) : raw;
    if (typeof value === 'number' && !Number.isFinite(value)) return { ok: false, reason: `${source.path} is not a number on the page` };
    setPath(output, source.path, input.vault.redact(String(value)) === String(value) ? value : undefined);
  }
  if (input.validateOutput) {
    const check = input.validateOutput(output);
    if (!check.ok) return { ok: false, reason: `the output read from the page does not match the output schema: ${check.errors}` };
  }
  return { ok: true, output };
}

function setPath(target: unknown, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys[keys.length - 1]!] = value;
}
