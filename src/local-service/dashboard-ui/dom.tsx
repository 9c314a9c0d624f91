// Small helpers shared by the dashboard's pages: showing a page, formatting, calling the API,
// and errors next to their fields. Pages are Preact components; text from the API is always
// rendered as text (JSX children), never as HTML.

import { render, type ComponentChildren, type VNode } from 'preact';
import { useMemo, useRef, useState } from 'preact/hooks';
import type { ValidationIssue } from '../../contract/api-errors.js';
import type { ExecutionRow } from '../../contract/executions.js';

export const app = document.getElementById('app') as HTMLElement;

/** Shows a page: what was shown goes (its effects stopped), the new one is drawn afresh. */
export function show(view: VNode): void {
  render(null, app);
  app.replaceChildren();
  render(view, app);
}

export const fmtDate = (s: string | null | undefined) => (s ? new Date(s).toLocaleString() : '—');
export const fmtMs = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
/** A moment of the run (ms since start, the video's time) as m:ss.s. */
export const fmtClock = (ms: number) => {
  const s = Math.max(0, ms) / 1000;
  return `${Math.floor(s / 60)}:${(s % 60).toFixed(1).padStart(4, '0')}`;
};
/** Dollars: cents from a dollar up, else four decimals (a run's cost is often a fraction of a cent); null or undefined: unknown. */
export const fmtUsd = (usd: number | null | undefined) => (typeof usd !== 'number' ? '—' : usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`);
export const fmtCount = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

export function StatusBadge({ status }: { status: ExecutionRow['status'] | string }) {
  return <span class={`status ${status}`} data-testid="status">{status}</span>;
}

export class ApiError extends Error {
  readonly status: number;
  /** The API's validation issues (`detail[]`), each with the `loc` of the field it is about. */
  readonly issues: ValidationIssue[];
  constructor(status: number, body: unknown) {
    const detail = body && typeof body === 'object' && 'detail' in body ? body.detail : undefined;
    const issues: ValidationIssue[] = Array.isArray(detail) ? (detail as ValidationIssue[]) : [];
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
// the page itself never holds the key. `T` is the contract's type of the answer (src/contract/).
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
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
  const data: unknown = text ? JSON.parse(text) : undefined;
  if (res.status === 401) signInThenReturn();
  if (!res.ok) throw new ApiError(res.status, data);
  return data as T;
}

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export function ErrorBox({ error }: { error: unknown }) {
  return <p class="error" role="alert" data-testid="error">{errorText(error)}</p>;
}

export const artifactUrl = (id: string, name: string) => `/artifacts/executions/${encodeURIComponent(id)}/${name.split('/').map(encodeURIComponent).join('/')}`;

/** An artifact's text, or undefined when there is none. */
export async function fetchArtifact(id: string, name: string): Promise<string | undefined> {
  const res = await fetch(artifactUrl(id, name));
  return res.ok ? res.text() : undefined;
}

export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** A field's attributes tying it to its error box: give them to the field, then put `box` right after it. */
export interface FieldBinding {
  'aria-describedby': string;
  'aria-invalid'?: 'true';
  onInput: () => void;
  onChange: () => void;
}

export interface FieldErrors {
  /** The error that belongs to no field (or a non-API error), where the form shows it. */
  general: ComponentChildren;
  field(name: string): FieldBinding;
  box(name: string): VNode;
  show(error: unknown): void;
  clear(): void;
}

/**
 * Errors next to their fields: each API issue whose `loc` names a field of the form
 * (`['body', field, …]`) is shown under that field, in the API's words without the path; the
 * rest go to `general`. An error goes as soon as its field is edited.
 */
export function useFieldErrors(names: readonly string[]): FieldErrors {
  const [byField, setByField] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<unknown>(undefined);
  const suffix = useMemo(() => Math.random().toString(36).slice(2, 8), []);
  const idOf = (name: string) => `error-${name}-${suffix}`;
  const clearField = (name: string) => setByField((now) => (name in now ? Object.fromEntries(Object.entries(now).filter(([k]) => k !== name)) : now));
  return {
    general: general === undefined ? null : <ErrorBox error={general} />,
    field: (name) => ({
      'aria-describedby': idOf(name),
      ...(byField[name] ? { 'aria-invalid': 'true' as const } : {}),
      onInput: () => clearField(name),
      onChange: () => clearField(name),
    }),
    box: (name) => (
      <p class="field-error" data-testid="field-error" data-field={name} role="alert" id={idOf(name)} hidden={!byField[name]}>
        {byField[name] ?? ''}
      </p>
    ),
    clear() {
      setGeneral(undefined);
      setByField({});
    },
    show(error) {
      if (!(error instanceof ApiError && error.issues.length)) {
        setGeneral(error);
        return;
      }
      const found: Record<string, string> = {};
      const rest: string[] = [];
      for (const issue of error.issues) {
        const name = issue.loc[0] === 'body' ? String(issue.loc[1] ?? '') : '';
        if (!names.includes(name)) {
          rest.push(issue.msg);
          continue;
        }
        const sub = issue.loc.slice(2).join('.');
        const before = found[name];
        found[name] = before ? `${before} ${issue.msg}` : sub ? `${sub}: ${issue.msg}` : issue.msg;
      }
      setByField(found);
      setGeneral(rest.length ? rest.join('\n') : undefined);
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

/** A secret shown once: readable, with a Copy button that falls back to selecting it (no clipboard: an insecure origin, a refusal). */
export function SecretOnce({ label, secret, testId, copyTestId }: { label: string; secret: string; testId: string; copyTestId: string }) {
  const text = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState('Copy');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied');
    } catch {
      const range = document.createRange();
      if (text.current) range.selectNodeContents(text.current);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      setCopied('Selected: press Ctrl+C');
    }
  };
  return (
    <div>
      <p>{label} Copy it now: it is not shown again.</p>
      <pre class="secret" data-testid={testId} ref={text}>{secret}</pre>
      <button type="button" data-testid={copyTestId} onClick={() => void copy()}>{copied}</button>
    </div>
  );
}

/** One page for an unknown address or id (what was on the page goes). */
export function NotFound() {
  return (
    <section data-testid="not-found">
      <h1>Not found</h1>
      <p>Nothing here has this address: it may have been deleted, or the link is mistyped.</p>
      <p><a href="#/workflows">Back to the workflows</a></p>
    </section>
  );
}

export const notFoundPage = () => show(<NotFound />);

/** A labelled field: its label, its hint, the field (given `errors.field(name)`) and its error box right after it. */
export function Field({ label, hint, name, errors, children, class: className }: { label: string; hint?: string; name?: string; errors?: FieldErrors; children: ComponentChildren; class?: string }) {
  return (
    <label class={className}>
      {label}
      {hint ? <span>{hint}</span> : null}
      {children}
      {name && errors ? errors.box(name) : null}
    </label>
  );
}

/** A form field's text ('' when absent). */
export const formText = (form: FormData, name: string) => {
  const v = form.get(name);
  return typeof v === 'string' ? v.replace(/\r\n?/g, '\n') : '';
};
