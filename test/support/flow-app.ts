import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';

/**
 * A ten-page application form (a permit application), for the run cache's repairs
 * (docs/run-cache.md#repair-not-restart): one page per field, each at a URL of its own
 * (`/apply/applicant`, `/apply/birth`, …), each with a heading, a sentence about it, its field
 * and a "Next" button (the last one "Submit application"); the values go into a draft kept by
 * a cookie, and the last page files the application and shows it (`/apply/done/N`). Serves on
 * 127.0.0.1; tests reach it as http://flow.test:PORT/ through BROWSER_HOST_RULES. Records every
 * application filed.
 *
 * `options` switches a page to a later version of the site while it runs, the way business
 * software changes between two runs of a workflow: a renamed button, a relabelled and moved
 * field, an interstitial dialog, a removed page, or a flow that really changed (from the address
 * on, pages that no earlier run saw).
 */
export interface FlowPage {
  slug: string;
  title: string;
  /** The field's label, and the input path it is filled from (also its `name` attribute). */
  label: string;
  name: string;
  kind: 'text' | 'date' | 'email' | 'tel' | 'select' | 'textarea';
  options?: string[];
  /** The label on the relabelled version of the page. */
  relabel: string;
}

export const FLOW_PAGES: readonly FlowPage[] = [
  { slug: 'applicant', title: 'Applicant', label: 'Full name', name: 'name', kind: 'text', relabel: 'Name of the applicant' },
  { slug: 'birth', title: 'Date of birth', label: 'Date of birth', name: 'born', kind: 'date', relabel: 'Birth date' },
  { slug: 'email', title: 'Email', label: 'Email address', name: 'email', kind: 'email', relabel: 'Where we write to you' },
  { slug: 'phone', title: 'Phone', label: 'Phone number', name: 'phone', kind: 'tel', relabel: 'Mobile or landline' },
  { slug: 'address', title: 'Address', label: 'Street address', name: 'street', kind: 'text', relabel: 'Street and house number' },
  { slug: 'city', title: 'City', label: 'City', name: 'city', kind: 'text', relabel: 'Town or city' },
  { slug: 'permit', title: 'Permit', label: 'Permit type', name: 'permit', kind: 'select', options: ['Residential', 'Commercial', 'Event'], relabel: 'Kind of permit' },
  { slug: 'start', title: 'Start date', label: 'Start date', name: 'starts', kind: 'date', relabel: 'First day of the permit' },
  { slug: 'reason', title: 'Reason', label: 'Reason for the permit', name: 'reason', kind: 'textarea', relabel: 'Why you need it' },
  { slug: 'reference', title: 'Reference', label: 'Your reference', name: 'reference', kind: 'text', relabel: 'Reference for your records' },
];

/** The pages of the flow that really changed: from the address on, none of them is an earlier page. */
export const CHANGED_FLOW_PAGES: ReadonlyArray<{ slug: string; title: string; fields: ReadonlyArray<Pick<FlowPage, 'label' | 'name' | 'kind' | 'options'>>; button: string }> = [
  { slug: 'location', title: 'Location', fields: [{ label: 'Street and number', name: 'street', kind: 'text' }, { label: 'Town', name: 'city', kind: 'text' }], button: 'Next' },
  {
    slug: 'details',
    title: 'Details',
    fields: [
      { label: 'Kind of permit', name: 'permit', kind: 'select', options: ['Residential', 'Commercial', 'Event'] },
      { label: 'First day', name: 'starts', kind: 'date' },
      { label: 'Why do you need it?', name: 'reason', kind: 'textarea' },
    ],
    button: 'Next',
  },
  { slug: 'confirm', title: 'Confirm', fields: [{ label: 'Reference for your records', name: 'reference', kind: 'text' }], button: 'Send the application' },
];

export type FlowApplication = Record<string, string> & { id: string };

export interface FlowOptions {
  /** That page's "Next" button says "Continue" (the last page's "Send application"). */
  renamed?: string[];
  /** That page's field has another label and sits lower, after a new optional field. */
  relabelled?: string[];
  /** A modal dialog opens over that page when it loads (the site's new terms). */
  dialog?: string[];
  /** Those pages are gone: the flow goes from the page before to the page after. */
  removed?: string[];
  /** From the address on, the flow is new (CHANGED_FLOW_PAGES). */
  changedFlow?: boolean;
  /** A back-office menu of 80 links on every page of the form: what makes a page's list of elements long. */
  menu?: boolean;
}

export interface FlowApp {
  origin: string;
  /** Applications filed, in order. */
  filed: FlowApplication[];
  options: FlowOptions;
  close(): Promise<void>;
}

const FIRST_APPLICATION = 5001;

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const MENU = `<nav aria-label="Back office" style="display:flex;flex-direction:column;font-size:12px">${Array.from({ length: 80 }, (_, i) => `<a href="/section/${i + 1}">Section ${i + 1}: records and reports</a>`).join('')}</nav>`;

function field(f: Pick<FlowPage, 'label' | 'name' | 'kind' | 'options'>, label = f.label): string {
  const id = `f-${f.name}`;
  const control =
    f.kind === 'select'
      ? `<select id="${id}" name="${f.name}"><option value="">Choose…</option>${(f.options ?? []).map((o) => `<option>${escape(o)}</option>`).join('')}</select>`
      : f.kind === 'textarea'
        ? `<textarea id="${id}" name="${f.name}" rows="3"></textarea>`
        : `<input id="${id}" name="${f.name}" type="${f.kind}">`;
  return `<p><label for="${id}">${escape(label)}</label><br>${control}</p>`;
}

export async function startFlowApp(): Promise<FlowApp> {
  const filed: FlowApplication[] = [];
  const options: FlowOptions = {};
  const drafts = new Map<string, Record<string, string>>();
  let nextDraft = 1;
  const has = (list: string[] | undefined, slug: string) => (list ?? []).includes(slug);

  // The menu is on the form's pages; the filed application's page is the application alone.
  const page = (title: string, main: string, menu = options.menu === true) =>
    `<!doctype html><html lang="en"><title>${escape(title)}</title><body style="margin:0;display:grid;grid-template-columns:${menu ? '220px ' : ''}1fr">${menu ? MENU : ''}<main style="padding:16px">${main}</main></body></html>`;

  /** The page after `slug` in the flow as it is now. */
  const after = (slug: string): string => {
    if (options.changedFlow) {
      if (slug === 'phone') return 'location';
      const at = CHANGED_FLOW_PAGES.findIndex((p) => p.slug === slug);
      if (at >= 0) return CHANGED_FLOW_PAGES[at + 1]?.slug ?? 'file';
    }
    let at = FLOW_PAGES.findIndex((p) => p.slug === slug) + 1;
    while (at < FLOW_PAGES.length && has(options.removed, FLOW_PAGES[at]!.slug)) at++;
    return FLOW_PAGES[at]?.slug ?? 'file';
  };

  const formPage = (slug: string): string | undefined => {
    const changed = options.changedFlow ? CHANGED_FLOW_PAGES.find((p) => p.slug === slug) : undefined;
    if (changed) {
      return page(changed.title, `<h1>${escape(changed.title)}</h1><p>Tell us where and when.</p><form method="post">${changed.fields.map((f) => field(f)).join('')}<p><button>${escape(changed.button)}</button></p></form>`);
    }
    const at = FLOW_PAGES.findIndex((p) => p.slug === slug);
    const p = FLOW_PAGES[at];
    if (!p || has(options.removed, slug) || (options.changedFlow && at >= 4)) return undefined;
    const last = at === FLOW_PAGES.length - 1;
    const renamed = has(options.renamed, slug);
    const button = last ? (renamed ? 'Send application' : 'Submit application') : renamed ? 'Continue' : 'Next';
    const own = has(options.relabelled, slug)
      ? // Moved: after a new optional field, inside a group of its own.
        `<fieldset><legend>Details</legend><p><label for="f-extra">Anything else (optional)</label><br><input id="f-extra" name="extra"></p>${field(p, p.relabel)}</fieldset>`
      : field(p);
    const dialog = has(options.dialog, slug)
      ? '<dialog id="terms" aria-labelledby="terms-title"><h2 id="terms-title">We updated our terms</h2><p>Applications filed from today follow the new terms of service.</p><form method="dialog"><button>Accept and continue</button></form></dialog><script>document.getElementById("terms").showModal();</script>'
      : '';
    return page(
      `Step ${at + 1} of ${FLOW_PAGES.length}: ${p.title}`,
      `<h1>${escape(p.title)}</h1><p>Step ${at + 1} of ${FLOW_PAGES.length} of your permit application.</p><form method="post">${own}<p><button>${button}</button></p></form>${dialog}`,
    );
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const html = (status: number, body: string, headers: Record<string, string> = {}) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(body);
    const slug = /^\/apply\/([a-z]+)$/.exec(url.pathname)?.[1];
    const cookie = /(?:^|;\s*)draft=(\d+)/.exec(req.headers.cookie ?? '')?.[1];
    if (req.method === 'POST' && slug) {
      void text(req).then((body) => {
        const id = cookie ?? String(nextDraft++);
        const draft = drafts.get(id) ?? {};
        for (const [k, v] of new URLSearchParams(body)) if (k !== 'extra') draft[k] = v;
        drafts.set(id, draft);
        const next = after(slug);
        const headers: Record<string, string> = { 'set-cookie': `draft=${id}; Path=/; HttpOnly; SameSite=Lax` };
        if (next !== 'file') return void res.writeHead(303, { ...headers, location: `/apply/${next}` }).end();
        const application: FlowApplication = { ...draft, id: String(FIRST_APPLICATION + filed.length) };
        filed.push(application);
        drafts.delete(id);
        res.writeHead(303, { ...headers, location: `/apply/done/${application.id}` }).end();
      });
      return;
    }
    const done = /^\/apply\/done\/(\d+)$/.exec(url.pathname)?.[1];
    const application = filed.find((a) => a.id === done);
    if (application) {
      const rows = [...FLOW_PAGES.map((p) => [p.label, p.name] as const)]
        .filter(([, name]) => application[name] !== undefined)
        .map(([label, name]) => `<dt>${escape(label)}</dt><dd>${escape(application[name]!)}</dd>`)
        .join('');
      return void html(200, page(`Application APP-${application.id}`, `<h1>Application filed</h1><p>Application APP-${application.id} was filed.</p><dl>${rows}</dl>`, false));
    }
    const form = slug ? formPage(slug) : undefined;
    if (form) return void html(200, form);
    html(404, page('Not found', '<h1>Not found</h1><p>This page does not exist.</p>'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://flow.test:${port}`, filed, options, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
