// The specification fields of the workflow form beyond the prompt, domains, URL, steps, schemas
// and limits (docs/specification.md): toolset, allowJavascript, cache, profile, approvals,
// humanTimeoutMs and budget. An emptied field is sent as null (an edit removes it); a checkbox
// left as the version has it is not sent, so the default stays a default.

import type { Specification } from '../../contract/specification.js';
import { Field, formText, type FieldErrors } from './dom.js';

/** The fields' names, as the API's issues name them (`loc: ['body', name]`). */
export const SPEC_FIELD_NAMES = ['toolset', 'allowJavascript', 'cache', 'profile', 'approvals', 'humanTimeoutMs', 'budget', 'budgetUsd'] as const;

type Tri = 'default' | 'true' | 'false';
const tri = (v: boolean | undefined): Tri => (v === undefined ? 'default' : v ? 'true' : 'false');
const triValue = (v: string): boolean | null => (v === 'default' || v === '' ? null : v === 'true');

function TriSelect({ name, value, defaultText, errors }: { name: string; value: Tri; defaultText: string; errors: FieldErrors }) {
  return (
    <select name={name} data-testid={name} {...errors.field(name)}>
      <option value="default" selected={value === 'default'}>{`default (${defaultText})`}</option>
      <option value="true" selected={value === 'true'}>yes</option>
      <option value="false" selected={value === 'false'}>no</option>
    </select>
  );
}

export function SpecFields({ spec, errors }: { spec: Partial<Specification>; errors: FieldErrors }) {
  const toolset = spec.toolset ?? '';
  return (
    <fieldset class="more-fields">
      <legend>Agent, people and limits</legend>
      <div class="row">
        <Field label="Toolset" hint="The agent's action space." name="toolset" errors={errors}>
          <select name="toolset" data-testid="toolset" {...errors.field('toolset')}>
            <option value="" selected={toolset === ''}>default (browser where the model supports it)</option>
            <option value="browser" selected={toolset === 'browser'}>browser</option>
            <option value="computer" selected={toolset === 'computer'}>computer</option>
          </select>
        </Field>
        <Field label="Allow JavaScript" hint="The browser toolset's javascript_exec." name="allowJavascript" errors={errors}>
          <TriSelect name="allowJavascript" value={tri(spec.allowJavascript)} defaultText="no" errors={errors} />
        </Field>
        <Field label="Run cache" hint="Replay this version's last good run." name="cache" errors={errors}>
          <TriSelect name="cache" value={tri(spec.cache)} defaultText="yes" errors={errors} />
        </Field>
      </div>
      <Field label="Profile" hint="A browser profile id (letters, digits, . _ -): the run signs in with it and keeps its sign-in." name="profile" errors={errors}>
        <input name="profile" data-testid="profile" defaultValue={spec.profile ?? ''} {...errors.field('profile')} />
      </Field>
      <Field label="Approvals" hint="Actions, in words, one per line, that need a person's approval first." name="approvals" errors={errors}>
        <textarea name="approvals" data-testid="approvals" defaultValue={(spec.approvals ?? []).join('\n')} {...errors.field('approvals')} />
      </Field>
      <div class="row">
        <Field label="Human timeout (ms)" hint="How long a run may wait for a person; 0: the agent cannot ask." name="humanTimeoutMs" errors={errors}>
          <input name="humanTimeoutMs" type="number" min={0} data-testid="humanTimeoutMs" defaultValue={spec.humanTimeoutMs === undefined ? '' : String(spec.humanTimeoutMs)} {...errors.field('humanTimeoutMs')} />
        </Field>
        {/* The API names the budget's caps `budget.tokens` / `budget.usd`: both show under the budget. */}
        <Field label="Budget (tokens)" hint="Cap on model tokens." name="budget" errors={errors}>
          <input name="budget" data-testid="budget-tokens" type="number" min={1} defaultValue={spec.budget?.tokens === undefined ? '' : String(spec.budget.tokens)} {...errors.field('budget')} />
        </Field>
        <Field label="Budget (USD)" hint="Cap on the estimated cost." name="budgetUsd" errors={errors}>
          <input name="budgetUsd" data-testid="budget-usd" type="number" min={0} step="any" defaultValue={spec.budget?.usd === undefined ? '' : String(spec.budget.usd)} {...errors.field('budgetUsd')} />
        </Field>
      </div>
    </fieldset>
  );
}

/** The body's part these fields give. */
export function readSpecFields(form: FormData): Record<string, unknown> {
  const num = (name: string) => (formText(form, name).trim() === '' ? undefined : Number(formText(form, name)));
  const tokens = num('budget');
  const usd = num('budgetUsd');
  const approvals = formText(form, 'approvals').split('\n').map((s) => s.trim()).filter(Boolean);
  return {
    toolset: formText(form, 'toolset') || null,
    allowJavascript: triValue(formText(form, 'allowJavascript')),
    cache: triValue(formText(form, 'cache')),
    profile: formText(form, 'profile').trim() || null,
    approvals: approvals.length ? approvals : null,
    humanTimeoutMs: num('humanTimeoutMs') ?? null,
    budget: tokens === undefined && usd === undefined ? null : { ...(tokens !== undefined ? { tokens } : {}), ...(usd !== undefined ? { usd } : {}) },
  };
}
