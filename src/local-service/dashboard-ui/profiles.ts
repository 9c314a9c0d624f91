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
      ? h('div', { 'data-testid': 'profiles-how-to' },
          h('p', {}, 'No profile yet.'),
          h('p', {}, 'A profile is made by a run: give a workflow a Profile (the workflow form, “Agent, people and limits”, e.g. ', h('code', {}, 'shop-admin'), '). Its first run signs in as the prompt says and, when it ends, the browser’s cookies and storage are saved, encrypted, under that name; later runs of any workflow naming it start signed in. See docs/profiles.md.'))
      : h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'profiles' },
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
        )),
  );
}
