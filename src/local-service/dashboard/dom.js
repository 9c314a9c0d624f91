// Small helpers shared by the dashboard's pages: building elements, formatting, and calling the
// API. Text from the API is always inserted as text nodes, never as HTML.

export const app = document.getElementById('app');

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export function render(...nodes) {
  app.replaceChildren(...nodes);
}

export const fmtDate = (s) => (s ? new Date(s).toLocaleString() : '—');
export const fmtMs = (ms) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
/** A moment of the run (ms since start, the video's time) as m:ss.s. */
export const fmtClock = (ms) => {
  const s = Math.max(0, ms) / 1000;
  return `${Math.floor(s / 60)}:${(s % 60).toFixed(1).padStart(4, '0')}`;
};
/** Dollars: cents from a dollar up, else four decimals (a run's cost is often a fraction of a cent); null or undefined: unknown. */
export const fmtUsd = (usd) => (typeof usd !== 'number' ? '—' : usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`);
export const fmtCount = (n) => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));
export const statusBadge = (s) => h('span', { class: `status ${s}`, 'data-testid': 'status' }, s);

export class ApiError extends Error {
  constructor(status, body) {
    const detail = Array.isArray(body?.detail) ? body.detail.map((d) => `${(d.loc || []).join('.')}: ${d.msg}`).join('\n') : JSON.stringify(body);
    super(`${status}: ${detail}`);
    this.status = status;
  }
}

/** Where to come back to after signing in. */
const AFTER_SIGN_IN = 'afterSignIn';

export function signInThenReturn() {
  if (!location.hash.startsWith('#/settings')) sessionStorage.setItem(AFTER_SIGN_IN, location.hash);
  location.hash = '#/settings';
}

export function afterSignIn() {
  const next = sessionStorage.getItem(AFTER_SIGN_IN);
  sessionStorage.removeItem(AFTER_SIGN_IN);
  return next || '#/workflows';
}

// The session cookie (HttpOnly, set by signing in or by a login link) goes with every request:
// the page itself never holds the key.
export async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (res.status === 401) signInThenReturn();
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export function errorBox(error) {
  return h('p', { class: 'error', role: 'alert', 'data-testid': 'error' }, error instanceof Error ? error.message : String(error));
}

export const artifactUrl = (id, name) => `/artifacts/executions/${encodeURIComponent(id)}/${name.split('/').map(encodeURIComponent).join('/')}`;

/** An artifact's text, or undefined when there is none. */
export async function fetchArtifact(id, name) {
  const res = await fetch(artifactUrl(id, name));
  return res.ok ? res.text() : undefined;
}

export function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
