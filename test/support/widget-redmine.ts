import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The server side of the Redmine-like page (test/fixtures/widgets/redmine-issue.html): the
 * "Add watchers" dialog's content, and the users matching a search, answered as Redmine answers
 * them (HTML, a moment later), so the page's poll and its XMLHttpRequest run for real.
 */
export const WATCHERS = ['Abena Asante', 'Ama Owusu', 'Kofi Mensah', 'Kofi Osei', 'Kwame Boateng', 'Yaw Adjei', ...Array.from({ length: 20 }, (_, i) => `Member ${String(i + 1).padStart(2, '0')}`)];

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
const userLabels = (q: string) =>
  WATCHERS.map((name, i) => ({ name, id: i + 1 }))
    .filter((u) => u.name.toLowerCase().includes(q.toLowerCase()))
    .map((u) => `<label><input type="checkbox" name="watcher[user_ids][]" value="${u.id}"><span class="name icon icon-user"></span>${escape(u.name)}</label>`)
    .join('');

/** Answers the page's requests; false for any other path. */
export async function handleRedmine(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname === '/watchers/new') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<h3 class="title">Add watchers</h3><form id="new-watcher-form"><p><label for="user_search">Search for user:</label><input type="text" name="user_search" id="user_search" class="autocomplete"></p>` +
        `<div id="users_for_watcher">${userLabels('')}</div><p class="buttons"><input type="submit" value="Add"> <a href="#" class="cancel">Cancel</a></p></form>`,
    );
    return true;
  }
  if (url.pathname === '/watchers/autocomplete') {
    await new Promise((resolve) => setTimeout(resolve, 150));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(userLabels(url.searchParams.get('q') ?? ''));
    return true;
  }
  return false;
}
