// The specification fields of the workflow form beyond the prompt, domains, URL, steps, schemas
// and limits (docs/specification.md): toolset, allowJavascript, cache, profile, approvals,
// humanTimeoutMs and budget. An emptied field is sent as null (an edit removes it); a checkbox
// left as the version has it is not sent, so the default stays a default.

/** These fields as contract/specification.ts has them (its module reaches Node's: not imported here). */
interface Specification {
  toolset: 'browser' | 'computer';
  allowJavascript: boolean;
  cache: boolean;
  profile: string;
  approvals: string[];
  humanTimeoutMs: number;
  budget: { tokens?: number; usd?: number };
}
import { h } from './dom.js';

type Tri = 'default' | 'true' | 'false';
const tri = (v: boolean | undefined): Tri => (v === undefined ? 'default' : v ? 'true' : 'false');
const triValue = (v: string): boolean | null => (v === 'default' ? null : v === 'true');

function triSelect(name: string, value: Tri, defaultText: string) {
  const el = h('select', { name, 'data-testid': name },
    h('option', { value: 'default' }, `default (${defaultText})`),
    h('option', { value: 'true' }, 'yes'),
    h('option', { value: 'false' }, 'no'),
  ) as HTMLSelectElement;
  el.value = value;
  return el;
}

export function specFields(spec: Partial<Specification>) {
  const toolset = h('select', { name: 'toolset', 'data-testid': 'toolset' },
    h('option', { value: '' }, 'default (browser where the model supports it)'),
    h('option', { value: 'browser' }, 'browser'),
    h('option', { value: 'computer' }, 'computer'),
  ) as HTMLSelectElement;
  toolset.value = spec.toolset ?? '';
  const fields = {
    toolset,
    allowJavascript: triSelect('allowJavascript', tri(spec.allowJavascript), 'no'),
    cache: triSelect('cache', tri(spec.cache), 'yes'),
    profile: h('input', { name: 'profile', 'data-testid': 'profile', value: spec.profile ?? '' }) as HTMLInputElement,
    approvals: h('textarea', { name: 'approvals', 'data-testid': 'approvals' }, (spec.approvals ?? []).join('\n')) as HTMLTextAreaElement,
    humanTimeoutMs: h('input', { name: 'humanTimeoutMs', type: 'number', min: 0, 'data-testid': 'humanTimeoutMs', value: spec.humanTimeoutMs ?? '' }) as HTMLInputElement,
    budget: h('input', { name: 'budget', 'data-testid': 'budget-tokens', type: 'number', min: 1, value: spec.budget?.tokens ?? '' }) as HTMLInputElement,
    budgetUsd: h('input', { name: 'budgetUsd', 'data-testid': 'budget-usd', type: 'number', min: 0, step: 'any', value: spec.budget?.usd ?? '' }) as HTMLInputElement,
  };
  const label = (text: string, hint: string, el: HTMLElement) => h('label', {}, text, h('span', {}, hint), el);
  const elements = h('fieldset', { class: 'more-fields' },
    h('legend', {}, 'Agent, people and limits'),
    h('div', { class: 'row' },
      label('Toolset', "The agent's action space.", fields.toolset),
      label('Allow JavaScript', "The browser toolset's javascript_exec.", fields.allowJavascript),
      label('Run cache', "Replay this version's last good run.", fields.cache),
    ),
    label('Profile', 'A browser profile id (letters, digits, . _ -): the run signs in with it and keeps its sign-in.', fields.profile),
    label('Approvals', "Actions, in words, one per line, that need a person's approval first.", fields.approvals),
    h('div', { class: 'row' },
      label('Human timeout (ms)', 'How long a run may wait for a person; 0: the agent cannot ask.', fields.humanTimeoutMs),
      label('Budget (tokens)', 'Cap on model tokens.', fields.budget),
      label('Budget (USD)', 'Cap on the estimated cost.', fields.budgetUsd),
    ),
  );
  const read = (): Record<string, unknown> => {
    const num = (el: HTMLInputElement) => (el.value.trim() === '' ? undefined : Number(el.value));
    const tokens = num(fields.budget);
    const usd = num(fields.budgetUsd);
    const approvals = fields.approvals.value.split('\n').map((s) => s.trim()).filter(Boolean);
    return {
      toolset: fields.toolset.value || null,
      allowJavascript: triValue(fields.allowJavascript.value),
      cache: triValue(fields.cache.value),
      profile: fields.profile.value.trim() || null,
      approvals: approvals.length ? approvals : null,
      humanTimeoutMs: num(fields.humanTimeoutMs) ?? null,
      budget: tokens === undefined && usd === undefined ? null : { ...(tokens !== undefined ? { tokens } : {}), ...(usd !== undefined ? { usd } : {}) },
    };
  };
  // The API names the budget's caps `budget.tokens` / `budget.usd`: both show under the budget.
  return { elements, fields: { ...fields, budget: fields.budget }, read };
}
