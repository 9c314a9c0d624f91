// A version's cached path (docs/run-cache.md, docs/api.md#run-cache) as a person reads it: each
// cached step, each action with the element it acted on, where each value it enters comes from
// (its binding, in words), its effect, whether the last repair made it, and what that repair
// changed. Read on demand; cleared with a button.

import type { BindingView, CachedActionView, RunCacheView } from '../../contract/run-cache-view.js';
import { ApiError, api, errorBox, fmtDate, h } from './dom.js';

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

function actionItem(a: CachedActionView) {
  return h('li', { 'data-testid': 'cache-action' },
    h('strong', {}, a.action), ' on ', elementWords(a.element ?? a.focus),
    h('span', { class: 'muted' }, ` (${a.page})`),
    a.by_repair ? h('span', { class: 'tag repair' }, ' made by the last repair') : null,
    a.bindings.length === 0
      ? null
      : h('ul', { class: 'bindings' }, a.bindings.map((b) => h('li', { 'data-testid': 'cache-binding' }, bindingWords(b)))),
    a.effect === undefined ? null : h('details', {}, h('summary', {}, 'Effect'), h('pre', {}, JSON.stringify(a.effect, null, 2))),
  );
}

export function cacheViewContent(cache: RunCacheView) {
  return [
    h('p', { class: 'muted' }, `Cached ${fmtDate(cache.created_at)} from execution `, h('a', { href: `#/executions/${cache.source_execution_id}` }, cache.source_execution_id), '.'),
    h('ol', { class: 'actions', 'data-testid': 'cache-steps' }, cache.steps.map((s) =>
      h('li', { 'data-testid': 'cache-step' }, `Step ${s.step}`, h('ul', {}, s.actions.map(actionItem))))),
    cache.not_asked.length ? h('p', { class: 'muted' }, `Input the pages no longer ask for: ${list(cache.not_asked)}.`) : null,
    cache.last_repair.length === 0
      ? null
      : h('div', { 'data-testid': 'cache-repair' }, h('h4', {}, 'The last repair'), h('ul', {}, cache.last_repair.map((r) =>
        h('li', {}, `Cached step ${r.cached_step}: ${r.reason}. Before: ${r.before.join(', ') || 'nothing'}; after: ${r.after.join(', ') || 'nothing'}.`)))),
  ];
}

export function cachedPath(workflowId: string, v: { workflow_version_uuid: string }) {
  const base = `/api/workflows/${encodeURIComponent(workflowId)}/versions/${encodeURIComponent(v.workflow_version_uuid)}/cache`;
  const box = h('div', { 'data-testid': 'cache-view' });
  const show = async () => {
    box.replaceChildren(h('p', { class: 'muted' }, 'Reading the cached path…'));
    try {
      const cache = (await api('GET', base)) as RunCacheView;
      box.replaceChildren(
        ...(cache.steps.length === 0 ? [h('p', { class: 'muted' }, 'No cached path.')] : cacheViewContent(cache)),
        h('button', { type: 'button', class: 'secondary', 'data-testid': 'clear-cache', onclick: async () => {
          await api('DELETE', base);
          box.replaceChildren(h('p', { class: 'muted' }, 'Cleared: the next run is the model’s.'));
        } }, 'Clear cache'),
      );
    } catch (err) {
      box.replaceChildren(err instanceof ApiError && err.status === 404 ? h('p', { class: 'muted' }, 'No cached path for this version yet: its first good run makes one.') : errorBox(err));
    }
  };
  return h('details', { class: 'cache', ontoggle: (e: Event) => (e.target as HTMLDetailsElement).open && void show() }, h('summary', {}, 'Cached path'), box);
}
