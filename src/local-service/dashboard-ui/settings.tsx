// Settings: signing this browser in with an API key, and Settings → API Keys (docs/operations.md#api-keys):
// the keys listed with their names, roles, what made them, creation and last use; a new named
// key with its role, shown once; revoking one. Signed in, making a key asks for no key: the
// session's own key is recorded as its maker, so revoking that key revokes it (docs/security.md).

import { useState } from 'preact/hooks';
import type { ApiKeyCreated, ApiKeyList, ApiKeyView, SessionInfo } from '../../contract/access.js';
import { ErrorBox, Field, SecretOnce, StalePage, afterSignIn, api, fmtDate, formText, show, useFieldErrors } from './dom.js';
import { WebhooksSection, loadWebhooks, type WebhooksData } from './webhooks.js';

/** The page; `created`: a key just made, shown once in its box. */
export async function settingsPage(created?: ApiKeyCreated) {
  const who = await fetch('/api/session').then((r) => (r.ok ? (r.json() as Promise<SessionInfo>) : undefined), () => undefined);
  const [keys, hooks] = who ? await Promise.all([api<ApiKeyList>('GET', '/api/keys'), loadWebhooks()]) : [undefined, undefined];
  show(<Settings who={who} keys={keys?.keys} hooks={hooks} created={created} />);
}

function Settings({ who, keys, hooks, created }: { who: SessionInfo | undefined; keys: ApiKeyView[] | undefined; hooks: WebhooksData | undefined; created: ApiKeyCreated | undefined }) {
  return (
    <>
      <h1>Settings</h1>
      {who ? <Session who={who} /> : <SignIn />}
      <h2 id="api-keys">API Keys</h2>
      {keys ? <Keys keys={keys} created={created} /> : <p class="muted">Sign in to see and manage the API keys.</p>}
      <h2 id="webhooks">Webhooks</h2>
      {hooks ? <WebhooksSection first={hooks} /> : <p class="muted">Sign in to see and manage the webhooks.</p>}
    </>
  );
}

function Session({ who }: { who: SessionInfo }) {
  return (
    <section>
      <h2>Session</h2>
      <p data-testid="signed-in-as">Signed in as <strong>{who.identity}</strong>.</p>
      <p class="muted">Sign out (in the menu) to sign in with another key.</p>
    </section>
  );
}

function SignIn() {
  const [error, setError] = useState<string | undefined>(undefined);
  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    setError(undefined);
    const key = formText(new FormData(e.currentTarget as HTMLFormElement), 'key').trim();
    const res = await fetch('/api/session', { method: 'POST', headers: { 'X-Service-Key': key } });
    if (res.ok) location.hash = afterSignIn();
    else setError(res.status === 401 ? 'That key is not one of the API keys.' : `Sign-in failed (${res.status}).`);
  };
  return (
    <section>
      <h2>Sign in</h2>
      <form onSubmit={(e) => void submit(e)}>
        <Field label="X-Service-Key" hint="An API key: one of API_KEYS, or one made below. It signs this browser in for 12 hours; the page does not keep it.">
          <input name="key" type="password" autocomplete="off" required data-testid="api-key" />
        </Field>
        <div>{error === undefined ? null : <ErrorBox error={error} />}</div>
        <button type="submit">Sign in</button>
      </form>
    </section>
  );
}

function Keys({ keys, created }: { keys: ApiKeyView[]; created: ApiKeyCreated | undefined }) {
  const nameOf = new Map<string, string>(keys.map((k) => [k.id, k.name]));
  const revoke = async (k: ApiKeyView) => {
    if (!confirm(`Revoke the key “${k.name}”? Requests made with it, and the sessions it opened, are refused at once.`)) return;
    await api('DELETE', `/api/keys/${encodeURIComponent(k.id)}`);
    await settingsPage();
  };
  return (
    <section>
      <p class="muted">Keys sign requests to the API (header X-Service-Key) and this dashboard in. The keys of API_KEYS are listed as bootstrap keys; take one out of API_KEYS to revoke it.</p>
      <div class="table-wrap">
        <table data-testid="api-keys" tabindex={0} aria-label="API keys">
          <thead><tr>{['Name', 'Role', 'Made by', 'Source', 'Created', 'Last used', ''].map((t) => <th>{t}</th>)}</tr></thead>
          <tbody>
            {keys.map((k) => (
              <tr data-testid="api-key-row" data-name={k.name} key={k.id}>
                <td>{k.name}{k.current ? <span class="muted"> (this session)</span> : null}</td>
                <td data-testid="key-role">{(k.roles ?? []).join(', ')}</td>
                <td data-testid="key-made-by">{k.created_by ? nameOf.get(k.created_by) ?? k.created_by : '—'}</td>
                <td>{k.source}</td>
                <td data-testid="key-created">{fmtDate(k.created_at)}</td>
                <td data-testid="key-last-used">{k.last_used_at ? fmtDate(k.last_used_at) : 'never'}</td>
                <td>{k.revocable ? <button class="danger" data-testid="revoke-key" onClick={() => void revoke(k)}>Revoke</button> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>New key</h2>
      <NewKeyForm />
      <div data-testid="new-key-box">
        {created ? <SecretOnce label={`The key “${created.name}”.`} secret={created.key} testId="new-key" copyTestId="copy-key" /> : null}
      </div>
    </section>
  );
}

function NewKeyForm() {
  const errors = useFieldErrors(['name', 'role']);
  const submit = async (e: SubmitEvent) => {
    e.preventDefault();
    errors.clear();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    let made: ApiKeyCreated;
    try {
      made = await api<ApiKeyCreated>('POST', '/api/keys', { name: formText(f, 'name').trim(), role: formText(f, 'role') });
    } catch (err) {
      if (!(err instanceof StalePage)) errors.show(err);
      return;
    }
    // The page is drawn again with the new key in its box, shown this once.
    await settingsPage(made);
  };
  return (
    <form data-testid="new-key-form" onSubmit={(e) => void submit(e)}>
      <Field label="Name" hint="Who or what will use it (letters, digits, ._@- and single spaces). Requests made with it are recorded under this name." name="name" errors={errors}>
        <input name="name" required maxlength={64} data-testid="new-key-name" {...errors.field('name')} />
      </Field>
      <Field label="Role" hint="An operator’s key reaches the API and the dashboard; a worker’s key only posts the worker’s reports. It is made by the key you signed in with, and revoked with it." name="role" errors={errors}>
        <select name="role" data-testid="new-key-role" {...errors.field('role')}>
          <option value="operator" selected>operator: the API and the dashboard</option>
          <option value="worker">worker: the worker’s reports only</option>
        </select>
      </Field>
      <div>{errors.general}</div>
      <button type="submit" data-testid="create-key">Create key</button>
    </form>
  );
}
