// Settings: signing this browser in with an API key, and Settings → API Keys (docs/operations.md#api-keys):
// the keys listed with their names, roles, what made them, creation and last use; a new named
// key with its role, shown once; revoking one. Signed in, making a key asks for no key: the
// session's own key is recorded as its maker, so revoking that key revokes it (docs/security.md).

import { afterSignIn, api, errorBox, fieldErrors, fmtDate, h, render } from './dom.js';
import { webhooksSection } from './webhooks.js';

export async function settingsPage() {
  const who = await fetch('/api/session').then((r) => (r.ok ? r.json() : undefined), () => undefined);
  render(
    h('h1', {}, 'Settings'),
    signInSection(who),
    h('h2', { id: 'api-keys' }, 'API Keys'),
    who ? await keysSection() : h('p', { class: 'muted' }, 'Sign in to see and manage the API keys.'),
    h('h2', { id: 'webhooks' }, 'Webhooks'),
    who ? await webhooksSection() : h('p', { class: 'muted' }, 'Sign in to see and manage the webhooks.'),
  );
}

function signInSection(who) {
  if (who) {
    return h('section', {},
      h('h2', {}, 'Session'),
      h('p', { 'data-testid': 'signed-in-as' }, 'Signed in as ', h('strong', {}, who.identity), '.'),
      h('p', { class: 'muted' }, 'Sign out (in the menu) to sign in with another key.'),
    );
  }
  const input = h('input', { name: 'key', type: 'password', autocomplete: 'off', required: true, 'data-testid': 'api-key' });
  const error = h('div');
  return h('section', {},
    h('h2', {}, 'Sign in'),
    h('form', {
      onsubmit: async (e) => {
        e.preventDefault();
        error.replaceChildren();
        const res = await fetch('/api/session', { method: 'POST', headers: { 'X-Service-Key': input.value.trim() } });
        if (res.ok) location.hash = afterSignIn();
        else error.replaceChildren(errorBox(res.status === 401 ? 'That key is not one of the API keys.' : `Sign-in failed (${res.status}).`));
      },
    },
      h('label', {}, 'X-Service-Key', h('span', {}, 'An API key: one of API_KEYS, or one made below. It signs this browser in for 12 hours; the page does not keep it.'), input),
      error,
      h('button', { type: 'submit' }, 'Sign in'),
    ),
  );
}

async function keysSection() {
  const { keys } = await api('GET', '/api/keys');
  const nameOf = new Map<string, string>(keys.map((k) => [k.id, k.name]));
  const created = h('div', { 'data-testid': 'new-key-box' });
  return h('section', {},
    h('p', { class: 'muted' }, 'Keys sign requests to the API (header X-Service-Key) and this dashboard in. The keys of API_KEYS are listed as bootstrap keys; take one out of API_KEYS to revoke it.'),
    h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'api-keys', tabindex: 0, 'aria-label': 'API keys' },
      h('thead', {}, h('tr', {}, ['Name', 'Role', 'Made by', 'Source', 'Created', 'Last used', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, keys.map((k) =>
        h('tr', { 'data-testid': 'api-key-row', 'data-name': k.name },
          h('td', {}, k.name, k.current ? h('span', { class: 'muted' }, ' (this session)') : null),
          h('td', { 'data-testid': 'key-role' }, (k.roles ?? []).join(', ')),
          h('td', { 'data-testid': 'key-made-by' }, k.created_by ? nameOf.get(k.created_by) ?? k.created_by : '—'),
          h('td', {}, k.source),
          h('td', { 'data-testid': 'key-created' }, fmtDate(k.created_at)),
          h('td', { 'data-testid': 'key-last-used' }, k.last_used_at ? fmtDate(k.last_used_at) : 'never'),
          h('td', {}, k.revocable
            ? h('button', {
                class: 'danger',
                'data-testid': 'revoke-key',
                onclick: async () => {
                  if (!confirm(`Revoke the key “${k.name}”? Requests made with it, and the sessions it opened, are refused at once.`)) return;
                  await api('DELETE', `/api/keys/${encodeURIComponent(k.id)}`);
                  await settingsPage();
                },
              }, 'Revoke')
            : null),
        ))),
    )),
    h('h2', {}, 'New key'),
    newKeyForm(created),
    created,
  );
}

function newKeyForm(created) {
  const name = h('input', { name: 'name', required: true, maxlength: 64, 'data-testid': 'new-key-name' });
  const role = h('select', { name: 'role', 'data-testid': 'new-key-role' },
    h('option', { value: 'operator', selected: true }, 'operator: the API and the dashboard'),
    h('option', { value: 'worker' }, 'worker: the worker’s reports only'));
  const general = h('div');
  const form = h('form', {
    'data-testid': 'new-key-form',
    onsubmit: async (e) => {
      e.preventDefault();
      errors.clear();
      created.replaceChildren();
      let body;
      try {
        body = await api('POST', '/api/keys', { name: name.value.trim(), role: role.value });
      } catch (err) {
        errors.show(err);
        return;
      }
      await settingsPage();
      // The page was redrawn: show the key in the new page's box, once.
      const box = document.querySelector('[data-testid="new-key-box"]');
      box?.replaceChildren(
        h('p', {}, `The key “${body.name}”. Copy it now: it is not shown again.`),
        h('pre', { class: 'secret', 'data-testid': 'new-key' }, body.key),
        h('button', { type: 'button', 'data-testid': 'copy-key', onclick: async (e: Event) => {
          const button = e.currentTarget as HTMLButtonElement;
          try {
            await navigator.clipboard.writeText(body.key);
            button.textContent = 'Copied';
          } catch {
            // No clipboard (an insecure origin, a refusal): the key is selected for a copy by hand.
            const range = document.createRange();
            range.selectNodeContents(box.querySelector('[data-testid=new-key]') as Node);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
            button.textContent = 'Selected: press Ctrl+C';
          }
        } }, 'Copy'),
      );
    },
  },
    h('label', {}, 'Name', h('span', {}, 'Who or what will use it (letters, digits, ._@- and single spaces). Requests made with it are recorded under this name.'), name),
    h('label', {}, 'Role', h('span', {}, 'An operator’s key reaches the API and the dashboard; a worker’s key only posts the worker’s reports. It is made by the key you signed in with, and revoked with it.'), role),
    general,
    h('button', { type: 'submit', 'data-testid': 'create-key' }, 'Create key'),
  );
  const errors = fieldErrors({ name, role }, general);
  return form;
}
