// Browser profiles (docs/profiles.md): what the workers keep of each workflow's sign-in, listed
// without any value (id, hosts, last save, size), each with a delete button.

import type { ProfileList, ProfileSummary } from '../../contract/profile.js';
import { api, fmtDate, show } from './dom.js';

const fmtSize = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} B`);

export async function profilesPage() {
  const { profiles } = await api<ProfileList>('GET', '/api/profiles');
  show(<Profiles profiles={profiles} />);
}

function Profiles({ profiles }: { profiles: ProfileSummary[] }) {
  const remove = async (p: ProfileSummary) => {
    if (!confirm(`Delete the profile “${p.id}”? Its next run signs in again.`)) return;
    await api('DELETE', `/api/profiles/${encodeURIComponent(p.id)}`);
    await profilesPage();
  };
  return (
    <>
      <h1>{`Profiles (${profiles.length})`}</h1>
      <p class="muted">Saved sign-ins, encrypted. Deleting one makes the next run that names it sign in afresh.</p>
      {profiles.length === 0 ? (
        <div data-testid="profiles-how-to">
          <p>No profile yet.</p>
          <p>
            A profile is made by a run: give a workflow a Profile (the workflow form, “Agent, people and limits”, e.g. <code>shop-admin</code>). Its first run signs in as the prompt says and, when it ends, the browser’s cookies and storage are saved, encrypted, under that name; later runs of any workflow naming it start signed in. See docs/profiles.md.
          </p>
        </div>
      ) : (
        <div class="table-wrap">
          <table data-testid="profiles">
            <thead><tr>{['Profile', 'Hosts', 'Saved', 'Size', ''].map((t) => <th>{t}</th>)}</tr></thead>
            <tbody>
              {profiles.map((p) => (
                <tr data-testid="profile-row" data-id={p.id}>
                  <td>{p.id}</td>
                  <td>{p.hosts.join(', ') || '—'}</td>
                  <td>{fmtDate(p.updated)}</td>
                  <td>{fmtSize(p.size)}</td>
                  <td><button class="danger" data-testid="delete-profile" onClick={() => void remove(p)}>Delete</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
