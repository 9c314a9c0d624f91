// Triggers on the dashboard: a version's status (publish / unpublish), its trigger and the next
// run of its schedule, the trigger fields of the workflow form, and the mark of an execution a
// schedule made. The rules are the API's (docs/api.md#triggers); the page only shows and sends.

import { useState } from 'preact/hooks';
import type { ExecutionRow } from '../../contract/executions.js';
import type { Workflow, WorkflowVersion } from '../../contract/workflows.js';
import { ErrorBox, Field, StalePage, api, fmtDateIn, formText, scheduleZone, type FieldErrors } from './dom.js';

/** The fields' names, as the API's issues name them. */
export const TRIGGER_FIELD_NAMES = ['triggerType', 'scheduleExpression', 'configuration'] as const;

type TriggerOf = Pick<WorkflowVersion, 'trigger_type' | 'schedule_expression'>;

/** "manual", or "schedule · <expression>". */
export const triggerText = (v: TriggerOf) => (v.trigger_type === 'schedule' ? `schedule · ${v.schedule_expression}` : 'manual');

/** The mark of an execution made by a schedule (nothing for one made by an execute call). */
export const ScheduleTag = ({ e }: { e: Pick<ExecutionRow, 'trigger'> }) => (e.trigger === 'schedule' ? <span class="tag schedule" data-testid="trigger-schedule">schedule</span> : null);

/** One line under the workflow's title: the current version's trigger, and when it runs next. */
export function CurrentTriggerLine({ v }: { v: WorkflowVersion | null }) {
  if (!v) return null;
  const parts = [v.status === 'draft' ? 'draft: not executed' : 'published', triggerText(v)];
  if (v.next_run_at) parts.push(`next run ${fmtDateIn(v.next_run_at, scheduleZone(v.schedule_expression))}`);
  return <p class="muted" data-testid="current-trigger">{parts.join(' · ')}</p>;
}

/** The cells of a version row: status (with its publish / unpublish button), trigger, next run. */
export function VersionTriggerCells({ workflowId, v, onChange }: { workflowId: string; v: WorkflowVersion; onChange: () => Promise<void> }) {
  const [error, setError] = useState<unknown>(undefined);
  const publish = v.status === 'draft';
  const click = async () => {
    setError(undefined);
    try {
      await api('POST', `/api/workflows/${encodeURIComponent(workflowId)}/versions/${encodeURIComponent(v.workflow_version_uuid)}/${publish ? 'publish' : 'unpublish'}`);
      await onChange();
    } catch (err) {
      // The page was left meanwhile: nothing to say on it.
      if (!(err instanceof StalePage)) setError(err);
    }
  };
  return (
    <>
      <td data-testid="version-status">
        <span class={`tag ${v.status}`}>{v.status}</span>{' '}
        <button type="button" class={publish ? undefined : 'secondary'} data-testid={publish ? 'publish-version' : 'unpublish-version'} onClick={() => void click()}>
          {publish ? 'Publish' : 'Unpublish'}
        </button>
        <div>{error === undefined ? null : <ErrorBox error={error} />}</div>
      </td>
      <td data-testid="version-trigger">{triggerText(v)}</td>
      <td data-testid="version-next-run">{v.next_run_at ? fmtDateIn(v.next_run_at, scheduleZone(v.schedule_expression)) : '—'}</td>
    </>
  );
}

/** The configuration as the form shows it: '' when there is none. */
export const configText = (current: Workflow | undefined) => {
  const config = current?.current_version?.configuration;
  return config && Object.keys(config).length > 0 ? JSON.stringify(config, null, 2) : '';
};

/** The form's trigger fields, filled from the current version. */
export function TriggerFields({ current, errors }: { current: Workflow | undefined; errors: FieldErrors }) {
  const v = current?.current_version;
  const type = v?.trigger_type ?? 'manual';
  return (
    <>
      <div class="row">
        <Field label="Trigger" name="triggerType" errors={errors}>
          <select name="triggerType" data-testid="trigger-type" {...errors.field('triggerType')}>
            <option value="manual" selected={type === 'manual'}>manual</option>
            <option value="schedule" selected={type === 'schedule'}>schedule</option>
          </select>
        </Field>
        <Field label="Schedule" hint="Cron, 5 or 6 fields, optional TZ=Area/City first; at most once a minute." name="scheduleExpression" errors={errors}>
          <input name="scheduleExpression" data-testid="schedule-expression" placeholder="TZ=Europe/Paris 0 9 * * 1-5" defaultValue={v?.schedule_expression ?? ''} {...errors.field('scheduleExpression')} />
        </Field>
      </div>
      <Field
        label="Configuration"
        hint={v?.specification?.payloadSchema
          ? 'JSON object. This workflow has a payload schema: a schedule runs with configuration.inputPayload as its input, so give one that fits the schema, e.g. {"inputPayload": {…}}.'
          : 'JSON object; inputPayload is the default input (scheduled runs use it).'}
        name="configuration"
        errors={errors}
      >
        <textarea name="configuration" data-testid="configuration" defaultValue={configText(current)} {...errors.field('configuration')} />
      </Field>
      <label class="inline"><input type="checkbox" name="draft" data-testid="save-as-draft" />Save as a draft (not executed until published)</label>
    </>
  );
}

/** The body's part the trigger fields give. */
export function readTriggerFields(form: FormData, current: Workflow | undefined, parseJson: (text: string, label: string) => unknown): Record<string, unknown> {
  const triggerType = formText(form, 'triggerType');
  const body: Record<string, unknown> = { triggerType, status: form.has('draft') ? 'draft' : 'published' };
  body.scheduleExpression = triggerType === 'schedule' ? formText(form, 'scheduleExpression').trim() || null : null;
  // Left as shown, the configuration is not sent: an edit keeps the stored one, whose secret
  // fields the page only ever sees as placeholders.
  const configuration = formText(form, 'configuration');
  if (configuration === configText(current)) return body;
  const parsed = parseJson(configuration, 'Configuration');
  body.configuration = parsed === undefined ? null : parsed;
  return body;
}
