// A version's cached path (docs/run-cache.md, docs/api.md#run-cache) as a person reads it: each
// cached step, each action with the element it acted on, where each value it enters comes from
// (its binding, in words), its effect, whether the last repair made it, and what that repair
// changed. Read on demand; cleared with a button.

import type { BindingView, CachedActionView, RunCacheView } from '../../contract/run-cache-view.js';
import { useState } from 'preact/hooks';
import { ApiError, ErrorBox, api, fmtDate } from './dom.js';

type Element = NonNullable<CachedActionView['element']>;

/** An element as a person names it: its role and accessible name, else its tag and id. */
export function elementWords(el: Element | null): string {
  if (!el) return 'the page';
  const name = el.name.trim() !== '' ? `“${el.name}”` : el.id ? `#${el.id}` : el.nameAttr ? `[name=${el.nameAttr}]` : '';
  return [el.role || el.tag, name].filter(Boolean).join(' ');
}

const list = (paths: string[]) => paths.map((p) => `“${p}”`).join(', ');

/** Where a value of the action comes from, in words. */
export function bindingWords(b: BindingView): string {
  const at = b.at === 'target' ? 'the element' : b.at;
  switch (b.kind) {
    case 'input':
      return `${at}: the input ${list(b.paths)}`;
    case 'constant':
      return `${at}: fixed text of the prompt (“${b.text.length > 60 ? `${b.text.slice(0, 60)}…` : b.text}”)`;
    case 'derived':
      return `${at}: the input “${b.path}”, ${derivationWords(b.derivation)}`;
    case 'pattern':
      return `the element: found by the name ${b.pattern}`;
    case 'file':
      return `the files of the input ${list(b.paths)}`;
    case 'guarded':
      return `${at}: no source (${b.why}); replayed only while the input at ${b.paths.length ? list(b.paths) : 'every path'} is as in the cached run`;
  }
}

function derivationWords(d: Extract<BindingView, { kind: 'derived' }>['derivation']): string {
  switch (d.how) {
    case 'whole':
      return 'written out';
    case 'word':
      return `word ${d.index + 1}`;
    case 'prefix':
      return `its first ${d.length} characters`;
    case 'piece':
      return `${d.unit} ${d.index + 1}`;
    case 'case':
      return `in ${d.to} case`;
    case 'number':
      return `as a number with ${d.decimals} decimals${d.before || d.after ? ` (“${d.before}…${d.after}”)` : ''}`;
    case 'date':
      return `as a date ${d.format}`;
  }
}

function ActionItem({ a }: { a: CachedActionView }) {
  return (
    <li data-testid="cache-action">
      <strong>{a.action}</strong> on {elementWords(a.element ?? a.focus)}
      <span class="muted">{` (${a.page})`}</span>
      {a.by_repair ? <span class="tag repair"> made by the last repair</span> : null}
      {a.bindings.length === 0 ? null : <ul class="bindings">{a.bindings.map((b) => <li data-testid="cache-binding">{bindingWords(b)}</li>)}</ul>}
      {a.effect === undefined ? null : <details><summary>Effect</summary><pre>{JSON.stringify(a.effect, null, 2)}</pre></details>}
    </li>
  );
}

export function CacheViewContent({ cache }: { cache: RunCacheView }) {
  return (
    <>
      <p class="muted">Cached {fmtDate(cache.created_at)} from execution <a href={`#/executions/${cache.source_execution_id}`}>{cache.source_execution_id}</a>.</p>
      <ol class="actions" data-testid="cache-steps">
        {cache.steps.map((s) => <li data-testid="cache-step">{`Step ${s.step}`}<ul>{s.actions.map((a) => <ActionItem a={a} />)}</ul></li>)}
      </ol>
      {cache.not_asked.length ? <p class="muted">{`Input the pages no longer ask for: ${list(cache.not_asked)}.`}</p> : null}
      {cache.last_repair.length === 0 ? null : (
        <div data-testid="cache-repair">
          <h4>The last repair</h4>
          <ul>{cache.last_repair.map((r) => <li>{`Cached step ${r.cached_step}: ${r.reason}. Before: ${r.before.join(', ') || 'nothing'}; after: ${r.after.join(', ') || 'nothing'}.`}</li>)}</ul>
        </div>
      )}
    </>
  );
}

type Shown = { state: 'closed' } | { state: 'reading' } | { state: 'cache'; cache: RunCacheView } | { state: 'none' } | { state: 'cleared' } | { state: 'error'; error: unknown };

export function CachedPath({ workflowId, v }: { workflowId: string; v: { workflow_version_uuid: string } }) {
  const base = `/api/workflows/${encodeURIComponent(workflowId)}/versions/${encodeURIComponent(v.workflow_version_uuid)}/cache`;
  const [shown, setShown] = useState<Shown>({ state: 'closed' });
  const read = async () => {
    setShown({ state: 'reading' });
    try {
      setShown({ state: 'cache', cache: await api<RunCacheView>('GET', base) });
    } catch (err) {
      setShown(err instanceof ApiError && err.status === 404 ? { state: 'none' } : { state: 'error', error: err });
    }
  };
  const clear = async () => {
    await api('DELETE', base);
    setShown({ state: 'cleared' });
  };
  return (
    <details class="cache" onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && void read()}>
      <summary>Cached path</summary>
      <div data-testid="cache-view">
        {shown.state === 'reading' ? <p class="muted">Reading the cached path…</p> : null}
        {shown.state === 'none' ? <p class="muted">No cached path for this version yet: its first good run makes one.</p> : null}
        {shown.state === 'cleared' ? <p class="muted">Cleared: the next run is the model’s.</p> : null}
        {shown.state === 'error' ? <ErrorBox error={shown.error} /> : null}
        {shown.state === 'cache' ? (
          <>
            {shown.cache.steps.length === 0 ? <p class="muted">No cached path.</p> : <CacheViewContent cache={shown.cache} />}
            <button type="button" class="secondary" data-testid="clear-cache" onClick={() => void clear()}>Clear cache</button>
          </>
        ) : null}
      </div>
    </details>
  );
}
