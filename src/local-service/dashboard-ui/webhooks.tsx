// Settings → Webhooks (docs/api.md#webhooks): a webhook made with its URL, its events and
// optionally one workflow, its signing secret shown once with a Copy button; the list; deleting
// one; and the deliveries of one, each attempt's time, status, latency and error, with "Send
// again" for any delivery.

import { useState } from 'preact/hooks';
import type { DeliveryList, DeliveryRow, WebhookCreated, WebhookList, WebhookRow } from '../../contract/webhooks.js';
import type { Workflow, WorkflowList } from '../../contract/workflows.js';
import { ErrorBox, Field, SecretOnce, StalePage, api, fmtDate, fmtMs, formText, useFieldErrors } from './dom.js';

const EVENTS = ['execution.started', 'execution.waiting', 'execution.completed', 'execution.failed'] as const;

export interface WebhooksData {
  items: WebhookRow[];
  workflows: Workflow[];
}

export async function loadWebhooks(): Promise<WebhooksData> {
  const [{ items }, workflows] = await Promise.all([api<WebhookList>('GET', '/api/webhooks'), api<WorkflowList>('GET', '/api/workflows?limit=200')]);
  return { items, workflows: workflows.items ?? [] };
}

/** What the section shows below the list: nothing, or the deliveries of one webhook. */
type Deliveries = { webhook: WebhookRow; state: 'reading' } | { webhook: WebhookRow; state: 'shown'; items: DeliveryRow[]; error?: unknown } | { webhook: WebhookRow; state: 'error'; error: unknown };

export function WebhooksSection({ first }: { first: WebhooksData }) {
  const [data, setData] = useState(first);
  const [created, setCreated] = useState<WebhookCreated | undefined>(undefined);
  const [deliveries, setDeliveries] = useState<Deliveries | undefined>(undefined);
  // Drawn again after a change: the list read anew, the form emptied, the deliveries closed.
  const [drawn, setDrawn] = useState(0);
  const redraw = async (made?: WebhookCreated) => {
    setData(await loadWebhooks());
    setCreated(made);
    setDeliveries(undefined);
    setDrawn((n) => n + 1);
  };
  const workflowName = new Map<string, string>(data.workflows.map((w) => [w.workflow_uuid, w.name]));
  const remove = async (w: WebhookRow) => {
    if (!confirm(`Delete the webhook to ${w.url}? What is still owed to it is dropped.`)) return;
    await api('DELETE', `/api/webhooks/${encodeURIComponent(w.id)}`);
    await redraw();
  };
  const showDeliveries = async (w: WebhookRow, error?: unknown) => {
    if (error === undefined) setDeliveries({ webhook: w, state: 'reading' });
    try {
      const { items } = await api<DeliveryList>('GET', `/api/webhooks/${encodeURIComponent(w.id)}/deliveries`);
      setDeliveries({ webhook: w, state: 'shown', items, error });
    } catch (err) {
      if (!(err instanceof StalePage)) setDeliveries({ webhook: w, state: 'error', error: err });
    }
  };
  const sendAgain = async (w: WebhookRow, d: DeliveryRow) => {
    try {
      await api('POST', `/api/webhooks/${encodeURIComponent(w.id)}/deliveries/${encodeURIComponent(d.id)}/retry`);
      await showDeliveries(w);
    } catch (err) {
      if (deliveries?.state === 'shown') setDeliveries({ ...deliveries, error: err });
    }
  };
  return (
    <section data-testid="webhooks-section">
      <p class="muted">A webhook POSTs an event to your URL when an execution starts, waits for a person, completes or fails, signed with its secret (Standard Webhooks).</p>
      {data.items.length === 0 ? (
        <p class="muted">No webhook yet.</p>
      ) : (
        <div class="table-wrap">
          <table data-testid="webhooks" tabindex={0} aria-label="Webhooks">
            <thead><tr>{['URL', 'Events', 'Workflow', 'Created', ''].map((t) => <th>{t}</th>)}</tr></thead>
            <tbody>
              {data.items.map((w) => (
                <tr data-testid="webhook-row" data-id={w.id} key={w.id}>
                  <td class="wrap">{w.url}</td>
                  <td>{w.events.join(', ')}</td>
                  <td>{w.workflowId ? workflowName.get(w.workflowId) ?? w.workflowId : 'every workflow'}</td>
                  <td>{fmtDate(w.created_at)}</td>
                  <td>
                    <button type="button" class="secondary" data-testid="show-deliveries" onClick={() => void showDeliveries(w)}>Deliveries</button>{' '}
                    <button type="button" class="danger" data-testid="delete-webhook" onClick={() => void remove(w)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div data-testid="deliveries-box">{deliveries ? <DeliveriesView shown={deliveries} onSendAgain={(d) => void sendAgain(deliveries.webhook, d)} /> : null}</div>
      <h3>New webhook</h3>
      <NewWebhookForm key={drawn} workflows={data.workflows} onCreated={(made) => redraw(made)} onStart={() => setCreated(undefined)} />
      <div data-testid="new-webhook-box">
        {created ? <SecretOnce label={`The signing secret of the webhook to ${created.url}.`} secret={created.secret} testId="webhook-secret" copyTestId="copy-webhook-secret" /> : null}
      </div>
    </section>
  );
}

function NewWebhookForm({ workflows, onCreated, onStart }: { workflows: Workflow[]; onCreated: (made: WebhookCreated) => Promise<void>; onStart: () => void }) {
  const errors = useFieldErrors(['url', 'events', 'workflowId']);
  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    errors.clear();
    onStart();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const body: Record<string, unknown> = { url: formText(f, 'url').trim(), events: f.getAll('events').filter((v) => typeof v === 'string') };
    if (formText(f, 'workflowId')) body.workflowId = formText(f, 'workflowId');
    let made: WebhookCreated;
    try {
      made = await api<WebhookCreated>('POST', '/api/webhooks', body);
    } catch (err) {
      if (!(err instanceof StalePage)) errors.show(err);
      return;
    }
    // The section is drawn again, the secret in its box, shown this once.
    await onCreated(made);
  };
  return (
    <form data-testid="new-webhook-form" onSubmit={(e) => void submit(e)}>
      <Field label="URL" hint="http:// or https://; the service POSTs each event here." name="url" errors={errors}>
        <input name="url" type="url" required placeholder="https://hooks.example.com/execution-worker" data-testid="webhook-url" {...errors.field('url')} />
      </Field>
      <fieldset class="events" {...errors.field('events')}>
        <legend>Events</legend>
        {EVENTS.map((event) => (
          <label class="inline"><input type="checkbox" name="events" value={event} defaultChecked data-testid={`webhook-event-${event}`} />{` ${event}`}</label>
        ))}
      </fieldset>
      {errors.box('events')}
      <Field label="Workflow" hint="Only this workflow’s executions, or every workflow’s." name="workflowId" errors={errors}>
        <select name="workflowId" data-testid="webhook-workflow" {...errors.field('workflowId')}>
          <option value="">Every workflow</option>
          {workflows.map((w) => <option value={w.workflow_uuid}>{w.name}</option>)}
        </select>
      </Field>
      <div>{errors.general}</div>
      <button type="submit" data-testid="create-webhook">Create webhook</button>
    </form>
  );
}

function DeliveriesView({ shown, onSendAgain }: { shown: Deliveries; onSendAgain: (d: DeliveryRow) => void }) {
  if (shown.state === 'reading') return <p class="muted">Reading the deliveries…</p>;
  if (shown.state === 'error') return <ErrorBox error={shown.error} />;
  return (
    <>
      {shown.error === undefined ? null : <ErrorBox error={shown.error} />}
      <h3>{`Deliveries to ${shown.webhook.url}`}</h3>
      {shown.items.length === 0 ? (
        <p class="muted">Nothing sent yet: an event of an execution sends one.</p>
      ) : (
        <ol class="deliveries" data-testid="deliveries">
          {shown.items.map((d) => (
            <li data-testid="delivery" data-id={d.id} key={d.id}>
              <p>
                <strong>{d.type}</strong> of <a href={`#/executions/${d.executionId}`}>{d.executionId}</a>{` · ${fmtDate(d.created_at)} · `}
                <span class={`status ${d.state}`} data-testid="delivery-state">{d.state}</span>
              </p>
              {d.attempts.length === 0 ? (
                <p class="muted">No attempt yet.</p>
              ) : (
                <div class="table-wrap">
                  <table data-testid="attempts" tabindex={0} aria-label="Attempts">
                    <thead><tr>{['Attempt', 'Status', 'Latency', 'Error'].map((t) => <th>{t}</th>)}</tr></thead>
                    <tbody>
                      {d.attempts.map((a) => (
                        <tr data-testid="attempt">
                          <td>{fmtDate(a.attemptedAt)}</td>
                          <td data-testid="attempt-status">{a.status ?? 'no answer'}</td>
                          <td>{fmtMs(a.latencyMs)}</td>
                          <td class={a.error ? 'error wrap' : 'muted'}>{a.error ?? ''}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              <button type="button" class="secondary" data-testid="send-again" onClick={() => onSendAgain(d)}>Send again</button>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}
