import { randomBytes } from 'node:crypto';
import { lastObservation, turnOf } from '../../demo/workflow.js';
import { acceptedCodes, TOTP_USER } from './files-site.js';
import { startRecordingServer, type RecordingServer } from './evil-server.js';
import { browser as member, finish, type RecordedRequest, type ScriptedResponse, type ScriptedTurn } from './scripted-model-server.js';

/**
 * The browser profiles' fixture (docs/profiles.md): `app.test`, a business app behind a sign-in
 * with a password and a TOTP code, that keeps its sign-in in an HttpOnly session cookie, plus a
 * preference cookie and a localStorage entry. `/account` redirects to `/login` without a valid
 * session. Its account page frames `evil.test`, and `/go/evil` redirects there: `evil.test`
 * answers every request with a cookie of its own, so a cookie that reached the browser from
 * it would show in a saved profile. `/notes` (signed in only, else to `/login`) is a form whose
 * saved note the next page shows: work behind the sign-in, for the run cache. Both hosts are
 * reached by name through `hostRules`.
 */

export const SIGN_IN_PASSWORD = 'correct-Horse-9';
/** Stored by the account page in localStorage: a value that must never be written anywhere. */
export const STORED_TOKEN = 'local-token-6f1c2a9e4b7d';
export const EVIL_COOKIE = 'evil-cookie-7a8b9c0d1e2f';

export interface SignInSite {
  hostRules: string;
  /** http://app.test (the host rule carries the port). */
  origin: string;
  app: RecordingServer;
  evil: RecordingServer;
  /** Session cookie values handed out, in order: secrets that must not be written anywhere. */
  sessions: string[];
  /** Accepted and refused sign-ins. */
  logins: Array<{ user: string; accepted: boolean }>;
  /** Notes saved on `/notes` (signed in only), in order. */
  notes: string[];
  /** The app forgets every session (a server-side sign-out): saved sign-ins go stale. */
  forgetSessions(): void;
  close(): Promise<void>;
}

/** Fixed places, for clicks by coordinate. */
export const LOGIN_FIELDS = { user: { x: 150, y: 30 }, password: { x: 150, y: 80 }, code: { x: 150, y: 130 }, submit: { x: 80, y: 180 } };

const field = (name: string, type: string, top: number, extra = '') =>
  `<input name="${name}" type="${type}" ${extra} style="position:absolute;left:20px;top:${top - 15}px;width:260px;height:30px" aria-label="${name}">`;

const LOGIN_PAGE =
  `<!doctype html><title>Sign in</title><body style="margin:0"><form method="post" action="/login">` +
  field('user', 'text', LOGIN_FIELDS.user.y) +
  field('password', 'password', LOGIN_FIELDS.password.y, 'autocomplete="current-password"') +
  field('code', 'text', LOGIN_FIELDS.code.y, 'autocomplete="one-time-code"') +
  `<button type="submit" style="position:absolute;left:20px;top:${LOGIN_FIELDS.submit.y - 15}px;width:120px;height:30px">Sign in</button></form>`;

const ACCOUNT_PAGE =
  `<!doctype html><title>Account</title><h1>Account of ${TOTP_USER}</h1><button>Sign out</button>` +
  // Says whether the browser brought the token along (a profile's localStorage), in a link the agent's page read lists, then stores it.
  `<a id="stored" href="#">?</a><script>document.getElementById('stored').textContent = localStorage.getItem('token') === '${STORED_TOKEN}' ? 'Stored token found' : 'No stored token'; localStorage.setItem('token', '${STORED_TOKEN}')</script>` +
  `<iframe src="http://evil.test/frame" width="200" height="50"></iframe>`;

const NOTES_PAGE =
  `<!doctype html><title>Notes</title><h1>Notes</h1><form method="post" action="/notes"><label>Note <input name="note" type="text"></label>` +
  `<button type="submit">Save note</button></form>`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startSignInSite(): Promise<SignInSite> {
  const valid = new Set<string>();
  const sessions: string[] = [];
  const logins: SignInSite['logins'] = [];
  const notes: string[] = [];
  const evil = await startRecordingServer('evil.test', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': [`tracker=${EVIL_COOKIE}; Path=/; Max-Age=3600`, `wide=${EVIL_COOKIE}; Domain=app.test; Path=/`] });
    res.end('<!doctype html><p>third party</p>');
  });
  const app = await startRecordingServer('app.test', (req, res, body) => {
    const url = new URL(req.url ?? '/', 'http://app.test');
    const sid = /(?:^|;\s*)sid=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const signedIn = sid !== undefined && valid.has(sid);
    if (req.method === 'POST' && url.pathname === '/login') {
      const form = new URLSearchParams(body);
      const accepted = form.get('user') === TOTP_USER && form.get('password') === SIGN_IN_PASSWORD && acceptedCodes(Date.now()).includes(form.get('code') ?? '');
      logins.push({ user: form.get('user') ?? '', accepted });
      if (!accepted) return void res.writeHead(401, { 'content-type': 'text/html' }).end('<!doctype html><title>Denied</title><p>Wrong sign-in</p>');
      const next = randomBytes(16).toString('hex');
      valid.add(next);
      sessions.push(next);
      res.writeHead(303, { location: '/account', 'set-cookie': [`sid=${next}; HttpOnly; Path=/; Max-Age=3600; SameSite=Lax`, 'layout=compact; Path=/; Max-Age=3600'] }).end();
      return;
    }
    if (url.pathname === '/login') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(LOGIN_PAGE);
    if (url.pathname === '/go/evil') return void res.writeHead(302, { location: 'http://evil.test/set' }).end();
    if (url.pathname === '/notes') {
      if (!signedIn) return void res.writeHead(302, { location: '/login' }).end();
      if (req.method !== 'POST') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(NOTES_PAGE);
      const note = new URLSearchParams(body).get('note') ?? '';
      notes.push(note);
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>Saved</title><p>Note saved: <output>${escapeHtml(note)}</output></p>`);
    }
    if (url.pathname === '/account' || url.pathname === '/') {
      if (!signedIn) return void res.writeHead(302, { location: '/login' }).end();
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ACCOUNT_PAGE);
    }
    res.writeHead(404).end('not found');
  });
  return {
    hostRules: `MAP app.test 127.0.0.1:${app.port},MAP evil.test 127.0.0.1:${evil.port}`,
    origin: 'http://app.test',
    app,
    evil,
    sessions,
    logins,
    notes,
    forgetSessions: () => valid.clear(),
    close: async () => {
      await Promise.all([app.close(), evil.close()]);
    },
  };
}

const click = (at: { x: number; y: number }) => member('left_click', { target: { type: 'coordinate', x: at.x, y: at.y } });

/**
 * The model of a workflow on this site, as an agent plays it: at the first turn of each
 * execution it looks at the page it is shown and signs in (user, `{{password}}`, `{{mfa}}`) only
 * when that is the sign-in form; then it finishes (or fails, as told). Input tokens are counted
 * as the request's size would give them: a longer conversation costs more.
 */
export function signInAgent(end: 'completed' | 'failed' = 'completed'): (request: RecordedRequest) => ScriptedTurn {
  let plan: ScriptedResponse[] = [];
  return (request) => {
    if (turnOf(request.body) === 0) {
      const signedIn = lastObservation(request.body).includes('Sign out');
      plan = signedIn
        ? []
        : [
            click(LOGIN_FIELDS.user),
            member('type', { text: TOTP_USER }),
            click(LOGIN_FIELDS.password),
            member('type', { text: '{{password}}' }),
            click(LOGIN_FIELDS.code),
            member('type', { text: '{{mfa}}' }),
            member('key', { text: 'Return' }),
          ];
      plan.push(end === 'completed' ? finish('completed', { signedIn: true }) : finish('failed', undefined, 'told to fail'));
    }
    const next = plan.shift() ?? finish('failed', undefined, 'the script ran out');
    return { ...next, usage: { input_tokens: Math.ceil(request.rawBody.length / 4), output_tokens: 20 } };
  };
}
