// Settings → Webhooks (docs/api.md#webhooks): a webhook made with its URL, its events and
// optionally one workflow, its signing secret shown once with a Copy button; the list; deleting
// one; and the deliveries of one, each attempt's time, status, latency and error, with "Send
// again" for any delivery.

import { api, errorBox, fieldErrors, fmtDate, fmtMs, h } from './dom.js';

const EVENTS = ['execution.started', 'execution.waiting', 'execution.completed', 'execution.failed'] as const;

/** A secret shown once: readable, with a Copy button that falls back to selecting it. */
export function shownOnce(label: string, secret: string, testId: string) {
  const pre = h('pre', { class: 'secret', 'data-testid': testId }, secret);
  return h('div', {},
    h('p', {}, `${label} Copy it now: it is not shown again.`),
    pre,
    h('button', { type: 'button', 'data-testid': `copy-${testId}`, onclick: async (e: Event) => {
      const button = e.currentTarget as HTMLButtonElement;
      try {
        await navigator.clipboard.writeText(secret);
        button.textContent = 'Copied';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(pre);
        getSelection()?.removeAllRanges();
        getSelection()?.addRange(range);
        button.textContent = 'Selected: press Ctrl+C';
      }
    } }, 'Copy'),
  );
}

export async function webhooksSection() {
  const [{ items }, workflows] = await Promise.all([api('GET', '/api/webhooks'), api('GET', '/api/workflows?limit=200')]);
  const workflowName = new Map<string, string>((workflows.items ?? []).map((w) => [w.workflow_uuid, w.name]));
  const section = h('section', { 'data-testid': 'webhooks-section' });
  const redraw = async () => section.replaceWith(await webhooksSection());
  const deliveriesBox = h('div', { 'data-testid': 'deliveries-box' });
  const created = h('div', { 'data-testid': 'new-webhook-box' });
  section.append(
    h('p', { class: 'muted' }, 'A webhook POSTs an event to your URL when an execution starts, waits for a person, completes or fails, signed with its secret (Standard Webhooks).'),
    items.length === 0
      ? h('p', { class: 'muted' }, 'No webhook yet.')
      : h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'webhooks', tabindex: 0, 'aria-label': 'Webhooks' },
        h('thead', {}, h('tr', {}, ['URL', 'Events', 'Workflow', 'Created', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, items.map((w) => h('tr', { 'data-testid': 'webhook-row', 'data-id': w.id },
          h('td', { class: 'wrap' }, w.url),
          h('td', {}, w.events.join(', ')),
          h('td', {}, w.workflowId ? workflowName.get(w.workflowId) ?? w.workflowId : 'every workflow'),
          h('td', {}, fmtDate(w.created_at)),
          h('td', {},
            h('button', { type: 'button', class: 'secondary', 'data-testid': 'show-deliveries', onclick: () => void showDeliveries(w, deliveriesBox) }, 'Deliveries'),
            ' ',
            h('button', { type: 'button', class: 'danger', 'data-testid': 'delete-webhook', onclick: async () => {
              if (!confirm(`Delete the webhook to ${w.url}? What is still owed to it is dropped.`)) return;
              await api('DELETE', `/api/webhooks/${encodeURIComponent(w.id)}`);
              await redraw();
            } }, 'Delete')),
        ))),
      )),
    deliveriesBox,
    h('h3', {}, 'New webhook'),
    newWebhookForm(workflows.items ?? [], created, redraw),
    created,
  );
  return section;
}

function newWebhookForm(workflows: { workflow_uuid: string; name: string }[], created: HTMLElement, redraw: () => Promise<void>) {
  const url = h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://hooks.example.com/execution-worker', 'data-testid': 'webhook-url' });
  const boxes = EVENTS.map((event) => h('input', { type: 'checkbox', name: 'events', value: event, checked: true, 'data-testid': `webhook-event-${event}` }));
  const events = h('fieldset', { class: 'events' }, h('legend', {}, 'Events'), EVENTS.map((event, i) => h('label', { class: 'inline' }, boxes[i], ` ${event}`)));
  const workflow = h('select', { name: 'workflowId', 'data-testid': 'webhook-workflow' },
    h('option', { value: '' }, 'Every workflow'),
    workflows.map((w) => h('option', { value: w.workflow_uuid }, w.name)));
  const general = h('div');
  const form = h('form', {
    'data-testid': 'new-webhook-form',
    onsubmit: async (e: Event) => {
      e.preventDefault();
      errors.clear();
      created.replaceChildren();
      const body: Record<string, unknown> = { url: url.value.trim(), events: boxes.filter((b) => b.checked).map((b) => b.value) };
      if (workflow.value) body.workflowId = workflow.value;
      let made;
      try {
        made = await api('POST', '/api/webhooks', body);
      } catch (err) {
        errors.show(err);
        return;
      }
      await redraw();
      // The section was drawn again: show the secret in the new one's box, once.
      document.querySelector('[data-testid="new-webhook-box"]')?.replaceChildren(shownOnce(`The signing secret of the webhook to ${made.url}.`, made.secret, 'webhook-secret'));
    },
  },
    h('label', {}, 'URL', h('span', {}, 'http:// or https://; the service POSTs each event here.'), url),
    events,
    h('label', {}, 'Workflow', h('span', {}, 'Only this workflow’s executions, or every workflow’s.'), workflow),
    general,
    h('button', { type: 'submit', 'data-testid': 'create-webhook' }, 'Create webhook'),
  );
  const errors = fieldErrors({ url, events, workflowId: workflow }, general);
  return form;
}

async function showDeliveries(w: { id: string; url: string }, box: HTMLElement) {
  box.replaceChildren(h('p', { class: 'muted' }, 'Reading the deliveries…'));
  const base = `/api/webhooks/${encodeURIComponent(w.id)}/deliveries`;
  try {
    const { items } = await api('GET', base);
    box.replaceChildren(
      h('h3', {}, `Deliveries to ${w.url}`),
      items.length === 0
        ? h('p', { class: 'muted' }, 'Nothing sent yet: an event of an execution sends one.')
        : h('ol', { class: 'deliveries', 'data-testid': 'deliveries' }, items.map((d) => h('li', { 'data-testid': 'delivery', 'data-id': d.id },
          h('p', {}, h('strong', {}, d.type), ' of ', h('a', { href: `#/executions/${d.executionId}` }, d.executionId), ` · ${fmtDate(d.created_at)} · `, h('span', { class: `status ${d.state}`, 'data-testid': 'delivery-state' }, d.state)),
          d.attempts.length === 0
            ? h('p', { class: 'muted' }, 'No attempt yet.')
            : h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'attempts', tabindex: 0, 'aria-label': 'Attempts' },
              h('thead', {}, h('tr', {}, ['Attempt', 'Status', 'Latency', 'Error'].map((t) => h('th', {}, t)))),
              h('tbody', {}, d.attempts.map((a) => h('tr', { 'data-testid': 'attempt' },
                h('td', {}, fmtDate(a.attemptedAt)),
                h('td', { 'data-testid': 'attempt-status' }, a.status ?? 'no answer'),
                h('td', {}, fmtMs(a.latencyMs)),
                h('td', { class: a.error ? 'error wrap' : 'muted' }, a.error ?? ''),
              ))))),
          h('button', { type: 'button', class: 'secondary', 'data-testid': 'send-again', onclick: async () => {
            try {
              await api('POST', `${base}/${encodeURIComponent(d.id)}/retry`);
              await showDeliveries(w, box);
            } catch (err) {
              box.prepend(errorBox(err));
            }
          } }, 'Send again'),
        ))),
    );
  } catch (err) {
    box.replaceChildren(errorBox(err));
  }
}
