/* eslint-disable @typescript-eslint/no-explicit-any -- the elements of the DOM builder and the API's JSON are untyped here for now: the contract's z.infer types are to replace them (docs/dashboard.md). */
// Small helpers shared by the dashboard's pages: building elements, formatting, and calling the
// API. Text from the API is always inserted as text nodes, never as HTML.

import type { ValidationIssue } from '../../contract/api-errors.js';

export const app = document.getElementById('app') as HTMLElement;

type Attrs = Record<string, unknown>;
type Child = Node | string | number | null | undefined | false | Child[];

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): any {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'value') (el as HTMLInputElement).value = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of (children as unknown[]).flat(Infinity as 1)) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
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
  readonly status: number;
  /** The API's validation issues (`detail[]`), each with the `loc` of the field it is about. */
  readonly issues: ValidationIssue[];
  constructor(status: number, body: unknown) {
    const issues: ValidationIssue[] = Array.isArray((body as { detail?: unknown })?.detail) ? (body as { detail: ValidationIssue[] }).detail : [];
    super(issues.length ? issues.map((d) => d.msg).join('\n') : `The service answered ${status}.`);
    this.status = status;
    this.issues = issues;
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

/**
 * An answer for a page the person has already left: thrown by `api` instead of the answer, so
 * the page that asked draws nothing over the page now shown (a slow list arriving after a click
 * to another page would replace it). The router ignores it.
 */
export class StalePage extends Error {
  constructor() {
    super('the page changed while this answer was on its way');
  }
}

/** Which page is shown: bumped by the router on every change of address. */
let pageEpoch = 0;
export function newPage(): void {
  pageEpoch += 1;
}

// The session cookie (HttpOnly, set by signing in or by a login link) goes with every request:
// the page itself never holds the key.
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const askedOn = pageEpoch;
  const answer = await call<T>(method, path, body);
  if (askedOn !== pageEpoch) throw new StalePage();
  return answer;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
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

/**
 * Errors next to their fields: each API issue whose `loc` names a field of the form
 * (`['body', field, …]`) is shown under that field, in the API's words without the path; the
 * rest go to `general`. An error goes as soon as its field is edited.
 */
export function fieldErrors(fields: Record<string, HTMLElement>, general: HTMLElement) {
  const boxes = new Map<string, HTMLElement>();
  for (const [name, el] of Object.entries(fields)) {
    const box = h('p', { class: 'field-error', 'data-testid': 'field-error', 'data-field': name, role: 'alert', hidden: true });
    box.id = `error-${name}-${Math.random().toString(36).slice(2, 8)}`;
    el.insertAdjacentElement('afterend', box);
    el.setAttribute('aria-describedby', box.id);
    boxes.set(name, box);
    const clear = () => {
      box.hidden = true;
      box.textContent = '';
      el.removeAttribute('aria-invalid');
    };
    el.addEventListener('input', clear);
    el.addEventListener('change', clear);
  }
  return {
    clear() {
      general.replaceChildren();
      for (const [name, box] of boxes) {
        box.hidden = true;
        box.textContent = '';
        fields[name]?.removeAttribute('aria-invalid');
      }
    },
    show(error: unknown) {
      const rest: string[] = [];
      if (error instanceof ApiError && error.issues.length) {
        for (const issue of error.issues) {
          const name = issue.loc[0] === 'body' ? String(issue.loc[1] ?? '') : '';
          const box = boxes.get(name);
          if (!box) {
            rest.push(issue.msg);
            continue;
          }
          const sub = issue.loc.slice(2).join('.');
          box.textContent = box.textContent ? `${box.textContent} ${issue.msg}` : sub ? `${sub}: ${issue.msg}` : issue.msg;
          box.hidden = false;
          fields[name]?.setAttribute('aria-invalid', 'true');
        }
        if (rest.length) general.replaceChildren(errorBox(rest.join('\n')));
        return;
      }
      general.replaceChildren(errorBox(error));
    },
  };
}

/** "1 screenshot", "3 screenshots". */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The zone of a schedule expression (`TZ=Area/City …`), or undefined (the server's zone, UTC). */
export const scheduleZone = (expression: string | null | undefined) => /^\s*(?:CRON_)?TZ=(\S+)\s/.exec(expression ?? '')?.[1];

/** A moment in a named zone, the zone's name shown: "Mon, 7 Dec 2026, 09:00 CET (Europe/Paris)". */
export function fmtDateIn(s: string | null | undefined, zone: string | undefined): string {
  if (!s) return '—';
  const timeZone = zone ?? 'UTC';
  try {
    const text = new Date(s).toLocaleString(undefined, { timeZone, weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
    return `${text} (${timeZone})`;
  } catch {
    return `${new Date(s).toISOString()} (UTC)`;
  }
}

/** One page for an unknown address or id (what was on the page goes). */
export function notFoundPage() {
  render(h('section', { 'data-testid': 'not-found' }, h('h1', {}, 'Not found'), h('p', {}, 'Nothing here has this address: it may have been deleted, or the link is mistyped.'), h('p', {}, h('a', { href: '#/workflows' }, 'Back to the workflows'))));
}
