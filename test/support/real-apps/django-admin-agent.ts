/**
 * A scripted model that adds an invoice in the Django admin (django-admin.ts) the way an agent
 * does: from the worker's own reads (`read_page` with `filter: "all"`), never from a fixed list
 * of turns, so it carries on from wherever a run is (the sign-in, the add form, the list after
 * the save, the invoice's own page). It signs in as "clerk", the user the prompt names, and
 * enters every input value by reference (`{{path}}`). A repair (its tools include `step_done`)
 * does what the page still lacks; a final check (`verify_replay` its only tool) answers from
 * the final page it is shown, as a model that sees only that page would: a field the view does
 * not show is a field it cannot report.
 */
import { finish, memberBlock, toolUseBlock, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from '../scripted-model-server.js';
import { parseRead, squash, type PageElement } from './page-read.js';
import { turnLog } from './turn-log.js';
import { actedHere, isFinalCheck, isRepair, lastUserText, pageToActOn, type RequestBody } from './request-read.js';

export interface InvoiceInput {
  password: string;
  vendor: string;
  reference: string;
  amount: number;
  /** YYYY-MM-DD */
  issued: string;
  notes: string;
  paid: boolean;
}

export type InvoiceOutput = Omit<InvoiceInput, 'password'>;

export const INVOICE_PROMPT =
  'Sign in to the office admin as "clerk" with the password from the input. Add an invoice with the vendor, vendor reference, amount, ' +
  'issue date, notes and paid state from the input and save it. Then open the invoice you added (the list names it "Invoice #<number> from <vendor>") ' +
  'and report its fields as the admin shows them.';

export function invoiceWorkflow(origin: string, host: string): Record<string, unknown> {
  return {
    name: 'Enter a vendor invoice',
    prompt: INVOICE_PROMPT,
    allowedDomains: [host],
    startUrl: `${origin}/admin/invoices/invoice/add/`,
    payloadSchema: {
      type: 'object',
      required: ['password', 'vendor', 'reference', 'amount', 'issued', 'notes', 'paid'],
      properties: { password: { type: 'string', writeOnly: true } },
    },
    outputSchema: {
      type: 'object',
      required: ['vendor', 'reference', 'amount', 'issued', 'notes', 'paid'],
      properties: {
        vendor: { type: 'string' },
        reference: { type: 'string' },
        amount: { type: 'number' },
        issued: { type: 'string' },
        notes: { type: 'string' },
        paid: { type: 'boolean' },
      },
    },
  };
}

export interface InvoiceAgentLog {
  turns: string[];
  lastSeen: string;
  verifications: Array<{ matches: boolean; reason: string }>;
}

/** The form's fields: their label as the admin writes it, the input path, the role. */
const FIELDS = [
  { label: 'Vendor', path: 'vendor', role: 'textbox' },
  { label: 'Vendor reference', path: 'reference', role: 'textbox' },
  { label: 'Amount', path: 'amount', role: 'spinbutton' },
  { label: 'Issued on', path: 'issued', role: 'textbox' },
  { label: 'Notes', path: 'notes', role: 'textbox' },
  { label: 'Paid', path: 'paid', role: 'checkbox' },
] as const;

const readAll = (): ScriptedContentBlock => memberBlock('read_page', { filter: 'all' });
const act = (...blocks: ScriptedContentBlock[]): ScriptedTurn => turn(...blocks, readAll());
const click = (element: PageElement): ScriptedContentBlock => memberBlock('left_click', { target: { type: 'ref', ref: element.ref } });
const form = (element: PageElement, value: unknown): ScriptedContentBlock => memberBlock('form_input', { target: { type: 'ref', ref: element.ref }, value });
const label = (name: string) => name.replace(/[:*]\s*$/, '').trim();

/** The field of a form a read shows, by its label. */
function field(page: readonly PageElement[], want: (typeof FIELDS)[number]): PageElement | undefined {
  return page.find((e) => e.ref && label(e.name).toLowerCase() === want.label.toLowerCase() && (e.role === want.role || (want.role === 'spinbutton' && e.role === 'textbox')));
}

function holds(element: PageElement, want: (typeof FIELDS)[number], input: InvoiceInput): boolean {
  const expected = input[want.path];
  if (typeof expected === 'boolean') return element.checked === expected;
  if (typeof expected === 'number') return Number(element.value ?? 'NaN') === expected;
  return squash(element.value ?? '') === squash(expected);
}

/** What the invoice's own page shows of each field; undefined for a field the read does not show. */
function shown(page: readonly PageElement[]): Partial<InvoiceOutput> {
  const out: Partial<Record<keyof InvoiceOutput, unknown>> = {};
  for (const want of FIELDS) {
    const element = field(page, want);
    if (!element) continue;
    if (want.role === 'checkbox') out[want.path] = element.checked === true;
    else if (want.role === 'spinbutton') out[want.path] = Number(element.value);
    else out[want.path] = element.value ?? '';
  }
  return out as Partial<InvoiceOutput>;
}

const recordLink = (input: InvoiceInput) => new RegExp(`^Invoice #\\d+ from ${input.vendor.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

export function invoiceAgent(input: InvoiceInput): { script: (request: RecordedRequest) => ScriptedTurn; log: InvoiceAgentLog } {
  const log: InvoiceAgentLog = { turns: [], lastSeen: '', verifications: [] };
  const { note, count } = turnLog(log.turns, 30);

  const script = (request: RecordedRequest): ScriptedTurn => {
    const body = request.body as RequestBody;
    if (isFinalCheck(body)) return verify(body);
    const spent = count();
    if (spent) return spent;
    const repair = isRepair(body);
    if (repair && actedHere(body)) return note('step done', turn(toolUseBlock('step_done', { note: 'did the step on this page' })));
    const seen = pageToActOn(body, repair);
    if (seen === undefined) return note('read', turn(readAll()));
    log.lastSeen = seen;
    const page = parseRead(seen);
    const named = (role: string, name: string) => page.find((e) => e.role === role && e.ref && e.name === name);

    // Sign-in: the user the prompt names, the password by its name.
    const username = page.find((e) => e.role === 'textbox' && e.ref && label(e.name) === 'Username');
    const password = page.find((e) => e.role === 'textbox' && e.ref && label(e.name) === 'Password');
    const logIn = named('button', 'Log in');
    if (username && password && logIn) return note('sign in', act(form(username, 'clerk'), form(password, '{{password}}'), click(logIn)));

    const heading = page.find((e) => e.role === 'heading' && e.depth >= 0 && /^(Add|Change) invoice$/.test(e.name))?.name;
    // The invoice's own page: report what it shows.
    if (heading === 'Change invoice') {
      const out = shown(page);
      const missing = FIELDS.filter((f) => !(f.path in out)).map((f) => f.path);
      if (missing.length > 0) return note('report', finish('failed', undefined, `the page does not show ${missing.join(', ')}`));
      if (repair) return note('step done', turn(toolUseBlock('step_done', { note: 'the invoice is open' })));
      return note('report', finish('completed', out));
    }

    // The add form: every field from the input, by name, then Save.
    if (heading === 'Add invoice') {
      const calls: ScriptedContentBlock[] = [];
      for (const want of FIELDS) {
        const element = field(page, want);
        if (!element) return finish('failed', undefined, `no field ${want.label} on the add form`);
        if (!holds(element, want, input)) calls.push(form(element, `{{${want.path}}}`));
      }
      const save = named('button', 'Save');
      if (!save) return finish('failed', undefined, 'no Save button on the add form');
      return note('fill and save', act(...calls, click(save)));
    }

    // The list after the save: open the invoice added, by its link (the row's, the last of that name).
    const links = page.filter((e) => e.role === 'link' && e.ref && recordLink(input).test(e.name));
    if (links.length > 0) return note('open the invoice', act(click(links.at(-1)!)));

    if (repair) return note('step done', turn(toolUseBlock('step_done', { note: 'nothing left to do on this page' })));
    return finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`);
  };

  const verify = (body: RequestBody): ScriptedTurn => {
    const text = lastUserText(body);
    const page = parseRead(text);
    const out = shown(page);
    const wrong = FIELDS.filter((f) => {
      const element = field(page, f);
      return element && !holds(element, f, input);
    }).map((f) => `${f.label} differs`);
    const missing = FIELDS.filter((f) => !(f.path in out)).map((f) => f.path);
    const isRecord = /Change invoice/.test(text);
    const answer = { matches: isRecord && wrong.length === 0, reason: !isRecord ? 'the page is not an invoice' : wrong.length > 0 ? wrong.join('; ') : missing.length > 0 ? `the view does not show ${missing.join(', ')}` : 'the invoice shows the input' };
    log.verifications.push(answer);
    // The output is what the page shows: a field it does not show is left out (the output schema then fails).
    return turn(toolUseBlock('verify_replay', { ...answer, ...(answer.matches ? { output: out } : {}) }));
  };

  return { script, log };
}

/** An invoice for a first run, and another that differs from it in every field (the clerk's password aside). */
export const FIRST_INVOICE: Omit<InvoiceInput, 'password'> = {
  vendor: 'Cobalt Software Ltd',
  reference: 'CS-2026-0412',
  amount: 1840.5,
  issued: '2026-03-04',
  notes: 'Annual licence renewal, 25 seats. Due within 30 days.',
  paid: true,
};
export const SECOND_INVOICE: Omit<InvoiceInput, 'password'> = {
  vendor: 'Harbour Freight & Co',
  reference: 'HF/77-B',
  amount: 312,
  issued: '2026-11-19',
  notes: 'Two pallets of printer paper, delivered to the back office.',
  paid: false,
};
