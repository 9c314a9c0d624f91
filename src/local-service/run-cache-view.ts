/**
 * A stored run cache entry as the local API shows it (contract/run-cache-view.ts): the entry's
 * steps with each action's bindings named, paths written as names. An entry that is not of the
 * current format is no cache to show.
 */
import type { BindingView, CachedActionView, RunCacheView } from '../contract/run-cache-view.js';
import { runCacheEntry, type CachedAction } from '../contract/run-cache.js';
import { formatPath } from '../contract/key-path.js';

export function runCacheView(raw: unknown): RunCacheView | undefined {
  const read = runCacheEntry.safeParse(raw);
  if (!read.success) return undefined;
  const entry = read.data;
  return {
    version_id: entry.versionId,
    format: entry.format,
    tool_type: entry.toolType,
    created_at: entry.createdAt,
    source_execution_id: entry.sourceExecutionId,
    steps: entry.steps.map((actions, i) => ({ step: i + 1, actions: actions.map(actionView) })),
    not_asked: (entry.notAsked ?? []).map(formatPath),
    last_repair: (entry.repairs ?? []).map((r) => ({ cached_step: r.cachedStep, reason: r.reason, before: r.before, after: r.after })),
  };
}

function actionView(cached: CachedAction): CachedActionView {
  const effect = (cached as { effect?: unknown }).effect;
  return {
    action: cached.toolsetName ? cached.tool : String(cached.input.action ?? cached.tool),
    tool: cached.toolsetName ?? cached.tool,
    page: cached.page,
    input: cached.input,
    element: cached.target ?? null,
    focus: cached.focus ?? null,
    bindings: bindingsOf(cached),
    ...(effect !== undefined ? { effect } : {}),
    by_repair: cached.byRepair === true,
  };
}

function bindingsOf(cached: CachedAction): BindingView[] {
  const out: BindingView[] = [];
  const sources = cached.sources ?? [];
  const bound = new Set(sources.map((b) => b.at));
  // Values entered by name alone are the entry's refs.
  const named = (cached.refs ?? []).map(formatPath);
  if (named.length > 0 && !sources.some((b) => b.source.kind === 'input')) out.push({ kind: 'input', at: 'text' in cached.input ? 'text' : 'value', paths: named });
  for (const { at, source } of sources) {
    if (source.kind === 'input') out.push({ kind: 'input', at, paths: source.paths.map(formatPath) });
    else if (source.kind === 'constant') out.push({ kind: 'constant', at, text: source.text });
    else if (source.kind === 'derived') out.push({ kind: 'derived', at, path: formatPath(source.path), derivation: source.derivation });
    else if (source.kind === 'pattern') out.push({ kind: 'pattern', at: 'target', pattern: source.parts.map((p) => ('text' in p ? p.text : `{{${formatPath(p.path)}}}`)).join('') });
    else out.push({ kind: 'file', at: 'paths', paths: source.paths.map(formatPath) });
  }
  if (cached.guard) {
    const at = ['text', 'value', 'paths'].find((k) => k in cached.input && !bound.has(k as never)) ?? 'target';
    out.push({ kind: 'guarded', at, why: cached.guard.why, paths: cached.guard.paths.map(formatPath), from: (cached.guard.from ?? cached.guard.paths).map(formatPath) });
  }
  return out;
}
