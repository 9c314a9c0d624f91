// Triggers on the dashboard: a version's status (publish / unpublish), its trigger and the next
// run of its schedule, the trigger fields of the workflow form, and the mark of an execution a
// schedule made. The rules are the API's (docs/api.md#triggers); the page only shows and sends.

import { api, errorBox, fmtDateIn, h, scheduleZone } from './dom.js';

/** "manual", or "schedule · <expression>". */
export const triggerText = (v) => (v.trigger_type === 'schedule' ? `schedule · ${v.schedule_expression}` : 'manual');

/** The mark of an execution made by a schedule (nothing for one made by an execute call). */
export const scheduleTag = (e) => (e.trigger === 'schedule' ? h('span', { class: 'tag schedule', 'data-testid': 'trigger-schedule' }, 'schedule') : null);

/** One line under the workflow's title: the current version's trigger, and when it runs next. */
export function currentTriggerLine(v) {
  if (!v) return null;
  const parts = [v.status === 'draft' ? 'draft: not executed' : 'published', triggerText(v)];
  if (v.next_run_at) parts.push(`next run ${fmtDateIn(v.next_run_at, scheduleZone(v.schedule_expression))}`);
  return h('p', { class: 'muted', 'data-testid': 'current-trigger' }, parts.join(' · '));
}

/** The cells of a version row: status (with its publish / unpublish button), trigger, next run. */
export function versionTriggerCells(workflowId, v, onChange) {
  const error = h('div');
  const publish = v.status === 'draft';
  const button = h('button', {
    type: 'button',
    class: publish ? null : 'secondary',
    'data-testid': publish ? 'publish-version' : 'unpublish-version',
    onclick: async () => {
      error.replaceChildren();
      try {
        await api('POST', `/api/workflows/${encodeURIComponent(workflowId)}/versions/${encodeURIComponent(v.workflow_version_uuid)}/${publish ? 'publish' : 'unpublish'}`);
        await onChange();
      } catch (err) {
        error.replaceChildren(errorBox(err));
      }
    },
  }, publish ? 'Publish' : 'Unpublish');
  return [
    h('td', { 'data-testid': 'version-status' }, h('span', { class: `tag ${v.status}` }, v.status), ' ', button, error),
    h('td', { 'data-testid': 'version-trigger' }, triggerText(v)),
    h('td', { 'data-testid': 'version-next-run' }, v.next_run_at ? fmtDateIn(v.next_run_at, scheduleZone(v.schedule_expression)) : '—'),
  ];
}

/** The form's trigger fields, filled from the current version; `read()` gives the body's part. */
export function triggerFormFields(current) {
  const v = current?.current_version;
  const config = v?.configuration && Object.keys(v.configuration).length > 0 ? JSON.stringify(v.configuration, null, 2) : '';
  const triggerType = h('select', { name: 'triggerType', 'data-testid': 'trigger-type' },
    h('option', { value: 'manual' }, 'manual'),
    h('option', { value: 'schedule' }, 'schedule'),
  );
  triggerType.value = v?.trigger_type ?? 'manual';
  const expression = h('input', { name: 'scheduleExpression', 'data-testid': 'schedule-expression', placeholder: 'TZ=Europe/Paris 0 9 * * 1-5', value: v?.schedule_expression ?? '' });
  const configuration = h('textarea', { name: 'configuration', 'data-testid': 'configuration' }, config);
  const draft = h('input', { type: 'checkbox', name: 'draft', 'data-testid': 'save-as-draft' });
  const elements = [
    h('div', { class: 'row' },
      h('label', {}, 'Trigger', triggerType),
      h('label', {}, 'Schedule', h('span', {}, 'Cron, 5 or 6 fields, optional TZ=Area/City first; at most once a minute.'), expression),
    ),
    h('label', {}, 'Configuration', h('span', {}, current?.current_version?.specification?.payloadSchema
      ? 'JSON object. This workflow has a payload schema: a schedule runs with configuration.inputPayload as its input, so give one that fits the schema, e.g. {"inputPayload": {…}}.'
      : 'JSON object; inputPayload is the default input (scheduled runs use it).'), configuration),
    h('label', { class: 'inline' }, draft, 'Save as a draft (not executed until published)'),
  ];
  const read = (parseJson) => {
    const body: Record<string, unknown> = { triggerType: triggerType.value, status: draft.checked ? 'draft' : 'published' };
    body.scheduleExpression = triggerType.value === 'schedule' ? expression.value.trim() || null : null;
    // Left as shown, the configuration is not sent: an edit keeps the stored one, whose secret
    // fields the page only ever sees as placeholders.
    if (configuration.value === config) return body;
    const parsed = parseJson(configuration.value, 'Configuration');
    body.configuration = parsed === undefined ? null : parsed;
    return body;
  };
  return { elements, read, fields: { triggerType, scheduleExpression: expression, configuration } };
}
