import { formatPath } from '../../../src/contract/key-path.js';
import { finish, memberBlock, toolUseBlock, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from '../scripted-model-server.js';
import { parseRead, shows, squash, type PageElement } from './page-read.js';
import { actedHere, isFinalCheck, isRepair, lastUserText, ownRead, type RequestBody, systemText } from './request-read.js';
import type { Redmine } from './redmine.js';

/**
 * A scripted model that files an issue in Redmine the way an agent does: from what the worker
 * shows it, never from a fixed list of turns. Each turn acts on the page it last read (its own
 * `read_page` with `filter: "all"`; anything else it was shown — the opening, a stopped replay's
 * hand-over, a question about the output — is answered by reading the page first), so it carries
 * on from wherever a run is: the sign-in, a form half filled by a replay, the watcher dialog, an
 * issue saved with wrong values (it edits that issue), the saved issue (it reports it).
 *
 * Values from the input are entered by reference (`{{path}}`) when the request says the model
 * may do that (its system prompt names `{{path}}` for that input value), else as literals;
 * `literals: true` always types literals, as the model of the runs that found the replay's
 * faults did. The watcher is searched by first name (a piece of an input value, which no
 * reference can name), or, with `searchWatcher: false`, ticked in the dialog's first list. A request whose only tool is `verify_replay` is the replay's final check:
 * it is answered by comparing the page the request carries with the input.
 */

/** What an issue says, the same in the agent's input and in Redmine's record of the issue (redmine-record.ts). */
export interface IssueFields {
  tracker: string;
  subject: string;
  /** Textile, with line breaks. */
  description: string;
  priority: string;
  assignee: string;
  category: string;
  targetVersion: string;
  startDate: string;
  dueDate: string;
  customerReference: string;
  customerNotes: string;
  deadline: string;
  billable: boolean;
  severity: string;
  platforms: string[];
  region: string;
  reviewer: string;
  fixedIn: string;
  runbook: string;
}

export interface IssueInput extends IssueFields {
  user: string;
  password: string;
  estimatedHours: number;
  affectedUsers: number;
  budget: number;
  /** A person's full name, as Redmine shows it. */
  watcher: string;
  /** An input file (docs/files-and-codes.md#input-files). */
  attachment: { $file: string };
}

/** The name the worker gives the attachment: the last segment of its URL. */
export function attachmentName(input: IssueInput): string {
  return decodeURIComponent(new URL(input.attachment.$file).pathname.split('/').at(-1)!);
}

export const ISSUE_PROMPT =
  'Sign in to Redmine with the user and password from the input. In the Operations project, create an issue with every value of the input: ' +
  'its tracker, subject, description (textile, keep its line breaks) and each other field, attach the input file, and add the watcher through ' +
  '"Search for watchers to add". Report the issue number.';

export function issueWorkflow(redmine: Redmine, fileHost: string): Record<string, unknown> {
  return {
    name: 'File a Redmine issue',
    prompt: ISSUE_PROMPT,
    allowedDomains: [redmine.host, fileHost],
    startUrl: `${redmine.origin}/projects/${redmine.facts.project.identifier}/issues/new`,
    payloadSchema: {
      type: 'object',
      required: ['user', 'password', 'tracker', 'subject', 'watcher', 'attachment'],
      properties: { password: { type: 'string', writeOnly: true } },
    },
    outputSchema: { type: 'object', required: ['issue'], properties: { issue: { type: 'string', pattern: '^[0-9]+$' } } },
  };
}

export interface IssueAgentOptions {
  /** Type every input value as a literal, even when references are offered. */
  literals?: boolean;
  /**
   * Search the watcher dialog by the watcher's first name (the default), or tick the watcher
   * where the dialog lists the project's members before any search (`false`).
   */
  searchWatcher?: boolean;
  /** Turns after which the model gives up (fails the run): a bound, never reached by a working run. */
  maxTurns?: number;
}

/** What the agent saw and did, for a test's failure messages. */
export interface AgentLog {
  turns: Array<{ kind: string; detail?: string }>;
  verifications: Array<{ matches: boolean; reason: string }>;
  /** The last page read the model acted on. */
  lastSeen: string;
}

/** The agent's turns and the end of the last page it read, for a failed expectation's message. */
export function describeRun(log: AgentLog): string {
  const turns = log.turns.map((t) => (t.detail ? `${t.kind} (${t.detail})` : t.kind)).join(' → ');
  return `the agent's turns: ${turns}\nits checks: ${JSON.stringify(log.verifications)}\nthe last page it read ends with:\n${log.lastSeen.slice(-2500)}`;
}

type Value = string | number | boolean;

interface FieldWant {
  role: 'textbox' | 'combobox' | 'checkbox' | 'radio';
  /** The label as the form shows it, without a required mark. */
  label: string;
  /** The input path it comes from; none for a value the model works out (a box to tick). */
  path?: string;
  value: Value;
}

const SECRET_PATHS = new Set(['password']);

function formWants(input: IssueInput): FieldWant[] {
  const text = (label: string, path: keyof IssueInput, role: FieldWant['role'] = 'textbox'): FieldWant => ({ role, label, path, value: input[path] as Value });
  return [
    text('Subject', 'subject'),
    text('Description', 'description'),
    text('Priority', 'priority', 'combobox'),
    text('Assignee', 'assignee', 'combobox'),
    text('Target version', 'targetVersion', 'combobox'),
    text('Start date', 'startDate'),
    text('Due date', 'dueDate'),
    text('Estimated time', 'estimatedHours'),
    text('Customer reference', 'customerReference'),
    text('Customer notes', 'customerNotes'),
    text('Affected users', 'affectedUsers'),
    text('Budget', 'budget'),
    text('Deadline', 'deadline'),
    text('Billable', 'billable', 'checkbox'),
    text('Severity', 'severity', 'combobox'),
    ...['Linux', 'macOS', 'Windows'].map((name): FieldWant => ({ role: 'checkbox', label: name, value: input.platforms.includes(name) })),
    { role: 'radio', label: input.region, value: true },
    text('Reviewer', 'reviewer', 'combobox'),
    text('Fixed in', 'fixedIn', 'combobox'),
    text('Runbook', 'runbook'),
  ];
}

function redrawing(input: IssueInput): FieldWant[] {
  return [
    { role: 'combobox', label: 'Tracker', path: 'tracker', value: input.tracker },
    { role: 'combobox', label: 'Category', path: 'category', value: input.category },
  ];
}

/** A label as the worker may name it: without a required mark or a trailing colon. */
function bare(name: string): string {
  return squash(name).replace(/\s*\*$/, '').replace(/\s*:$/, '');
}

function holds(element: PageElement, want: FieldWant): boolean {
  if (typeof want.value === 'boolean') return element.checked === want.value;
  if (typeof want.value === 'number') return element.value !== undefined && Number(element.value) === want.value;
  return shows(element.value, want.value);
}

export function issueAgent(redmine: Redmine, input: IssueInput, options: IssueAgentOptions = {}): { script: (request: RecordedRequest) => ScriptedTurn; log: AgentLog } {
  const log: AgentLog = { turns: [], verifications: [], lastSeen: '' };
  const maxTurns = options.maxTurns ?? 60;
  const fileName = attachmentName(input);
  const firstName = input.watcher.split(' ')[0]!;
  let turns = 0;
  let waits = 0;

  const script = (request: RecordedRequest): ScriptedTurn => {
    const body = request.body as RequestBody;
    if (isFinalCheck(body)) return verify(body);
    // Asked without the browser (to read the output from the page text it is given): answer from that text.
    if (!body.tools?.some((t) => t.type?.startsWith('browser_toolset'))) return report(body);
    if (++turns > maxTurns) return finish('failed', undefined, `gave up after ${maxTurns} turns`);
    // A repair asks for one cached step on the page as it is: it is done once this model acted there.
    if (isRepair(body) && actedHere(body)) return note('step done', turn(toolUseBlock('step_done', { note: 'did the step on this page' })));
    const seen = ownRead(body);
    if (seen === undefined) return note('read', turn(readAll()));
    log.lastSeen = seen;
    const offered = (path: string) => !options.literals && systemText(body).includes(`{{${path}}}`);
    const enter = (want: FieldWant): Value => (want.path && (SECRET_PATHS.has(want.path) || offered(want.path)) ? `{{${formatPath([want.path])}}}` : want.value);
    const page = parseRead(seen);
    const outside = page.filter((e) => e.dialog === undefined);
    const find = (elements: PageElement[], role: string, label: string) => elements.find((e) => e.role === role && e.ref && bare(e.name) === label);

    // Sign-in.
    const login = find(outside, 'textbox', 'Login');
    const password = outside.find((e) => e.role === 'textbox' && e.ref && /^Password\b/.test(e.name));
    if (login && password) {
      return note('sign in', act(form(login, enter({ role: 'textbox', label: 'Login', path: 'user', value: input.user })), form(password, '{{password}}'), click(find(outside, 'button', 'Login')!)));
    }

    // The watcher dialog, on the new issue form or on a saved issue.
    const dialog = page.filter((e) => e.dialog !== undefined);
    if (dialog.length > 0) {
      const search = dialog.find((e) => e.role === 'textbox' && /^Search for user/.test(bare(e.name)));
      if (!search) return finish('failed', undefined, `a dialog I do not know is open: ${dialog[0]!.line}`);
      const listed = dialog.filter((e) => e.role === 'checkbox');
      const add = dialog.find((e) => e.role === 'button' && e.name === 'Add')!;
      const unsearched = options.searchWatcher === false && (search.value ?? '') === '' && listed.find((e) => e.name === input.watcher);
      if (unsearched) return note('add watcher', act(...(unsearched.checked ? [] : [form(unsearched, true)]), click(add)));
      if (squash(search.value ?? '') !== firstName) return note('search', act(form(search, firstName)));
      // The list is filtered by a poll of the search box, after the read may have answered.
      if (listed.some((e) => !e.name.toLowerCase().includes(firstName.toLowerCase()))) {
        if (++waits > 20) return finish('failed', undefined, 'the watcher list never showed the search result');
        return note('wait for the list', turn(memberBlock('wait', { duration: 1 }), readAll()));
      }
      const box = listed.find((e) => e.name === input.watcher);
      if (!box) return finish('failed', undefined, `no user "${input.watcher}" to add as a watcher`);
      return note('add watcher', act(...(box.checked ? [] : [form(box, true)]), click(add)));
    }

    // A saved issue: report it when it is right, else put it right.
    const saved = issueShown(page);
    if (saved) {
      const wrong = issueMismatches(page, input);
      if (wrong.length === 0) return note('report', finish('completed', { issue: saved.id }));
      if (wrong.some((w) => w.startsWith('watcher'))) {
        const addWatcher = outside.find((e) => e.role === 'link' && e.name === 'Add' && /\/watchers\/new\?/.test(e.line));
        if (addWatcher) return note('open the watcher dialog', act(click(addWatcher)), wrong.join('; '));
      }
      const edit = outside.find((e) => e.role === 'link' && e.name === 'Edit' && /\/issues\/\d+\/edit/.test(e.line));
      if (edit && !find(outside, 'button', 'Submit')) return note('edit the issue', act(click(edit)), wrong.join('; '));
    }

    // The issue form: new (Create) or an edit of a saved issue (Submit).
    const tracker = find(outside, 'combobox', 'Tracker');
    const submit = find(outside, 'button', 'Create') ?? find(outside, 'button', 'Submit');
    if (tracker && submit) {
      // Redmine draws the form again when the tracker or (on a new issue) the category changes:
      // each is set alone, the page read again, before the other fields.
      for (const want of redrawing(input)) {
        const field = find(outside, want.role, want.label);
        if (field && !holds(field, want)) return note(want.label.toLowerCase(), act(form(field, enter(want))));
      }
      const actions: ScriptedContentBlock[] = [];
      for (const want of formWants(input)) {
        const field = find(outside, want.role, want.label);
        if (field && !holds(field, want)) actions.push(form(field, enter(want)));
      }
      const attached = page.some((e) => e.value === fileName || (e.role === 'link' && e.name === fileName));
      const upload = outside.find((e) => e.ref && e.line.includes('file input'));
      if (!attached && upload) actions.push(memberBlock('file_upload', { target: { type: 'ref', ref: upload.ref }, paths: [fileName] }));
      const onNewForm = submit.name === 'Create';
      const watching = outside.some((e) => e.role === 'checkbox' && e.name === input.watcher && e.checked === true);
      if (onNewForm && !watching) {
        const searchLink = outside.find((e) => e.role === 'link' && e.name === 'Search for watchers to add');
        if (!searchLink) return finish('failed', undefined, 'the form offers no way to add a watcher');
        return note('fill the form, open the watcher dialog', act(...actions, click(searchLink)));
      }
      if (actions.length > 0) return note('fill the form', act(...actions));
      return note(onNewForm ? 'create' : 'submit', act(click(submit)));
    }

    if (saved) return finish('failed', undefined, `the issue shows other values and I cannot edit it: ${issueMismatches(page, input).join('; ')}`);
    // Nothing I know (a page still loading after a slow answer): look again a little later.
    if (++waits > 20) return finish('failed', undefined, `lost on a page I do not know: ${seen.slice(0, 300)}`);
    return note('wait for the page', turn(memberBlock('wait', { duration: 1 }), readAll()));
  };

  const verify = (body: RequestBody): ScriptedTurn => {
    const text = lastUserText(body);
    const page = parseRead(text);
    const saved = issueShown(page, text);
    const wrong = saved ? issueMismatches(page, input, text) : ['the page is not a saved issue'];
    const answer = { matches: wrong.length === 0, reason: wrong.length === 0 ? `issue #${saved!.id} shows every value of the input` : wrong.join('; ') };
    log.verifications.push(answer);
    return turn(toolUseBlock('verify_replay', { ...answer, ...(saved && wrong.length === 0 ? { output: { issue: saved.id } } : {}) }));
  };

  const report = (body: RequestBody): ScriptedTurn => {
    const text = lastUserText(body);
    const page = parseRead(text);
    const saved = issueShown(page, text);
    const wrong = saved ? issueMismatches(page, input, text) : ['the page is not a saved issue'];
    log.turns.push({ kind: 'report from the text', ...(wrong.length > 0 ? { detail: wrong.join('; ') } : {}) });
    return wrong.length === 0 ? finish('completed', { issue: saved!.id }) : finish('failed', undefined, wrong.join('; '));
  };

  const note = (kind: string, reply: ScriptedTurn, detail?: string): ScriptedTurn => {
    log.turns.push(detail ? { kind, detail } : { kind });
    if (!kind.startsWith('wait')) waits = 0;
    return reply;
  };
  return { script, log };
}

// ---- the saved issue ----

/**
 * The issue a page shows, when it shows one: its heading `Tracker #N` (and the subject heading
 * after it), or else the tab's title as a read's header gives it (`Bug #4: Subject - Operations -
 * Redmine`), for reads that carry no headings.
 */
export function issueShown(page: PageElement[], text = ''): { id: string; tracker: string; subject?: string } | undefined {
  const at = page.findIndex((e) => e.role === 'heading' && /^.+ #\d+$/.test(e.name));
  if (at >= 0) {
    const [, tracker, id] = /^(.+) #(\d+)$/.exec(page[at]!.name)!;
    const subject = page.slice(at + 1).find((e) => e.role === 'heading')?.name;
    return { id: id!, tracker: tracker!, ...(subject !== undefined ? { subject } : {}) };
  }
  const title = /(?:^|[\s:])([A-Z][\w ]*?) #(\d+): (.+?) - [^\n]*Redmine\b/m.exec(text);
  return title ? { tracker: title[1]!, id: title[2]!, subject: title[3]! } : undefined;
}

/**
 * What the issue page shows that the input does not say, one line each. What the read does not
 * show (a read of the viewport only, without text) is not judged.
 */
export function issueMismatches(page: PageElement[], input: IssueInput, text = ''): string[] {
  const wrong: string[] = [];
  const shown = issueShown(page, text);
  if (!shown) return ['not an issue page'];
  if (shown.tracker !== input.tracker) wrong.push(`tracker is ${shown.tracker}, the input says ${input.tracker}`);
  if (shown.subject !== undefined && squash(shown.subject) !== squash(input.subject)) wrong.push(`subject is ${shown.subject}, the input says ${input.subject}`);
  const attributes = attributeValues(page);
  const expect = (label: string, want: string, same = (a: string, b: string) => squash(a) === squash(b)) => {
    const value = attributes.get(label);
    if (value !== undefined && !same(value, want)) wrong.push(`${label} is "${value}", the input says "${want}"`);
  };
  const number = (a: string, b: string) => Number(a.replace(/[^0-9.]/g, '')) === Number(b);
  // "2.50 h", or "2:30 h" in Redmine's minutes format.
  const hours = (a: string, b: string) => {
    const clock = /^(\d+):(\d\d)/.exec(a);
    return (clock ? Number(clock[1]) + Number(clock[2]) / 60 : Number(a.replace(/[^0-9.]/g, ''))) === Number(b);
  };
  expect('Priority', input.priority);
  expect('Assignee', input.assignee);
  expect('Category', input.category);
  expect('Target version', input.targetVersion);
  expect('Start date', input.startDate);
  // "2026-12-11 (Due in 15 days)"
  expect('Due date', input.dueDate, (a, b) => a.replace(/\s*\(.*\)$/, '') === b);
  expect('Estimated time', String(input.estimatedHours), hours);
  expect('Customer reference', input.customerReference);
  expect('Affected users', String(input.affectedUsers), number);
  expect('Budget', String(input.budget), number);
  expect('Deadline', input.deadline);
  expect('Billable', input.billable ? 'Yes' : 'No');
  expect('Severity', input.severity);
  expect('Platforms', [...input.platforms].sort().join(', '), (a, b) => a.split(',').map((s) => s.trim()).sort().join(', ') === b);
  expect('Region', input.region);
  expect('Reviewer', input.reviewer);
  expect('Fixed in', input.fixedIn);
  expect('Runbook', input.runbook);
  const watchers = watchersShown(page);
  if (watchers && !watchers.includes(input.watcher)) wrong.push(`watchers are ${watchers.length > 0 ? watchers.join(', ') : '(none)'}, the input says ${input.watcher}`);
  // The files are judged when the read shows their whole section: its heading and what follows it.
  const files = page.findIndex((e) => (e.role === 'paragraph' || e.role === 'heading') && e.name === 'Files');
  const after = files >= 0 && page.slice(files + 1).some((e) => (e.role === 'paragraph' || e.role === 'heading') && /^(Subtasks|Related issues|History)$/.test(e.name));
  if (after && !page.some((e) => e.role === 'link' && e.name === attachmentName(input))) wrong.push(`${attachmentName(input)} is not attached`);
  return wrong;
}

/** `Label:` lines of the issue's attributes and the line after each ('' when the next is another label; none when the read ends there). */
function attributeValues(page: PageElement[]): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < page.length; i++) {
    const label = page[i]!.role === 'text' ? /^(.+?)\s*:$/.exec(page[i]!.name) : null;
    if (!label) continue;
    const next = page[i + 1];
    // The read ends at the label (the viewport's edge, or its length): its value is not shown.
    if (!next) continue;
    // A link to another site shows its address cut short: its target is the value.
    const value = /:\s*$/.test(next.name) ? '' : next.role === 'link' && /^https?:/.test(next.href ?? '') ? next.href! : next.name;
    if (!values.has(label[1]!)) values.set(label[1]!, value === '-' ? '' : value);
  }
  return values;
}

/** The people listed under the sidebar's `Watchers (N)` heading; undefined when the read does not show it. */
function watchersShown(page: PageElement[]): string[] | undefined {
  const at = page.findIndex((e) => e.role === 'heading' && /^Watchers \(\d+\)$/.test(e.name));
  if (at < 0) return undefined;
  const names: string[] = [];
  for (const e of page.slice(at + 1)) {
    if (e.depth === 0 && e.role !== 'list' && e.role !== 'listitem' && e.role !== 'link' && e.role !== 'img') break;
    if (e.role === 'link' && /\/users\/\d+/.test(e.line)) names.push(e.name);
  }
  return names;
}

// ---- actions ----

function readAll(): ScriptedContentBlock {
  return memberBlock('read_page', { filter: 'all' });
}

/** Actions, then a read of the whole page to see what they did. */
function act(...blocks: ScriptedContentBlock[]): ScriptedTurn {
  return turn(...blocks, readAll());
}

function form(element: PageElement, value: Value): ScriptedContentBlock {
  return memberBlock('form_input', { target: { type: 'ref', ref: element.ref }, value });
}

function click(element: PageElement): ScriptedContentBlock {
  return memberBlock('left_click', { target: { type: 'ref', ref: element.ref } });
}
