import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';

/**
 * An issue tracker's "new issue" form, built like the one where cached repeats reported a wrong
 * record as completed (docs/run-cache.md#values-from-the-input): a subject, a tracker (a select
 * whose default is "Bug"), a "Billable" checkbox, the project members as watcher checkboxes, and
 * a watcher search box that filters people as one types and adds the first match on Enter (an
 * autocomplete). Serves on 127.0.0.1; tests reach it as http://issues.test:PORT/ through
 * BROWSER_HOST_RULES. Records every issue created.
 */
export interface IssueRecord {
  id: string;
  subject: string;
  tracker: string;
  billable: boolean;
  watchers: string[];
  /** Set once the issue was published (the `drafts` variant saves a draft first). */
  published: boolean;
}

export interface IssuesApp {
  origin: string;
  issues: IssueRecord[];
  options: {
    /** Create saves a draft; the issue's page has a "Publish" button that publishes it. */
    drafts?: boolean;
  };
  close(): Promise<void>;
}

/** Project members: each a watcher checkbox on the form. */
export const MEMBERS = ['Kofi Mensah', 'Ama Owusu'];
/** Everybody the watcher search finds. */
export const PEOPLE = ['Kofi Mensah', 'Ama Owusu', 'Yaw Boateng', 'Kofi Annan-Boateng', 'Efua Sutherland'];

const FIRST_ISSUE = 301;

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const page = (title: string, body: string) => `<!doctype html><html lang="en"><title>${escape(title)}</title><body>${body}</body></html>`;

/** The autocomplete: the list shows the people whose name contains what was typed; Enter adds the first one shown. */
const SEARCH_SCRIPT = `<script>
const people = ${JSON.stringify(PEOPLE)};
const box = document.getElementById('watcher-search');
const list = document.getElementById('suggestions');
const chosen = document.getElementById('chosen');
function shown() { const q = box.value.trim().toLowerCase(); return q ? people.filter((p) => p.toLowerCase().includes(q)) : []; }
function render() { list.innerHTML = shown().map((p) => '<li role="option">' + p + '</li>').join(''); box.setAttribute('aria-expanded', String(shown().length > 0)); }
function add(name) {
  const li = document.createElement('li');
  li.innerHTML = '<input type="hidden" name="watchers"><span></span> <button type="button">Remove</button>';
  li.querySelector('input').value = name;
  li.querySelector('span').textContent = name;
  li.querySelector('button').setAttribute('aria-label', 'Remove ' + name);
  li.querySelector('button').addEventListener('click', () => li.remove());
  chosen.appendChild(li);
}
box.addEventListener('input', render);
box.addEventListener('keydown', (event) => {
  if (event.key !== 'Enter') return;
  event.preventDefault();
  const first = shown()[0];
  if (first) add(first);
  box.value = '';
  render();
});
</script>`;

export async function startIssuesApp(): Promise<IssuesApp> {
  const issues: IssueRecord[] = [];
  const options: IssuesApp['options'] = {};
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const html = (status: number, body: string) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    const shown = /^\/issues\/(\d+)$/.exec(url.pathname)?.[1];
    if (req.method === 'POST') {
      void text(req).then((body) => {
        const form = new URLSearchParams(body);
        if (url.pathname === '/issues') {
          const record: IssueRecord = {
            id: String(FIRST_ISSUE + issues.length),
            subject: form.get('subject') ?? '',
            tracker: form.get('tracker') ?? '',
            billable: form.get('billable') === 'on',
            watchers: [...form.getAll('member'), ...form.getAll('watchers')],
            published: !options.drafts,
          };
          issues.push(record);
          return void res.writeHead(303, { location: `/issues/${record.id}` }).end();
        }
        const publish = /^\/issues\/(\d+)\/publish$/.exec(url.pathname)?.[1];
        const record = issues.find((i) => i.id === publish);
        if (!record) return void res.writeHead(404).end();
        record.published = true;
        res.writeHead(303, { location: `/issues/${record.id}` }).end();
      });
      return;
    }
    if (url.pathname === '/issues/new') {
      const trackers = ['Bug', 'Feature', 'Support'].map((t) => `<option>${t}</option>`).join('');
      const members = MEMBERS.map((m) => `<label><input type="checkbox" name="member" value="${escape(m)}"> ${escape(m)}</label>`).join(' ');
      return void html(
        200,
        page(
          'New issue',
          '<h1>New issue</h1><form method="post" action="/issues">' +
            '<p><label>Subject <input name="subject"></label></p>' +
            `<p><label>Tracker <select name="tracker">${trackers}</select></label></p>` +
            '<p><label><input type="checkbox" name="billable"> Billable</label></p>' +
            `<fieldset><legend>Watchers</legend>${members}` +
            '<p><label>Add watcher <input id="watcher-search" role="combobox" aria-autocomplete="list" aria-controls="suggestions" aria-expanded="false" autocomplete="off"></label></p>' +
            '<ul id="suggestions" role="listbox" aria-label="People found"></ul><ul id="chosen" aria-label="Watchers added"></ul></fieldset>' +
            `<p><button>Create</button></p></form>${SEARCH_SCRIPT}`,
        ),
      );
    }
    const record = issues.find((i) => i.id === shown);
    if (record) {
      const state = record.published ? `Issue #${record.id} created.` : `Issue #${record.id} is a draft: it is not filed until it is published.`;
      const publish = record.published ? '' : `<form method="post" action="/issues/${record.id}/publish"><button>Publish</button></form>`;
      return void html(
        200,
        page(
          `Issue #${record.id}`,
          `<h1>${escape(record.subject)}</h1><p>${state}</p><dl>` +
            `<dt>Tracker</dt><dd>${escape(record.tracker)}</dd>` +
            `<dt>Billable</dt><dd>${record.billable ? 'yes' : 'no'}</dd>` +
            `<dt>Watchers</dt><dd>${record.watchers.map(escape).join(', ') || 'none'}</dd></dl>${publish}`,
        ),
      );
    }
    html(404, page('Not found', '<h1>Not found</h1>'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://issues.test:${port}`, issues, options, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
