// Browser profiles (docs/profiles.md): what the workers keep of each workflow's sign-in, listed
// without any value (id, hosts, last save, size), each with a delete button.

import { api, fmtDate, h, render } from './dom.js';

const fmtSize = (n) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} B`);

export async function profilesPage() {
  const { profiles } = await api('GET', '/api/profiles');
  render(
    h('h1', {}, `Profiles (${profiles.length})`),
    h('p', { class: 'muted' }, 'Saved sign-ins, encrypted. Deleting one makes the next run that names it sign in afresh.'),
    profiles.length === 0
      ? h('p', { class: 'muted' }, 'No profile yet.')
      : h('table', { 'data-testid': 'profiles' },
          h('thead', {}, h('tr', {}, ['Profile', 'Hosts', 'Saved', 'Size', ''].map((t) => h('th', {}, t)))),
          h('tbody', {}, profiles.map((p) =>
            h('tr', { 'data-testid': 'profile-row', 'data-id': p.id },
              h('td', {}, p.id),
              h('td', {}, p.hosts.join(', ') || '—'),
              h('td', {}, fmtDate(p.updated)),
              h('td', {}, fmtSize(p.size)),
              h('td', {}, h('button', {
                class: 'danger',
                'data-testid': 'delete-profile',
                onclick: async () => {
                  if (!confirm(`Delete the profile “${p.id}”? Its next run signs in again.`)) return;
                  await api('DELETE', `/api/profiles/${encodeURIComponent(p.id)}`);
                  await profilesPage();
                },
              }, 'Delete')),
            ))),
        ),
  );
}
