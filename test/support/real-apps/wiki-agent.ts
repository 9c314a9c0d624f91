import { finish, memberBlock, toolUseBlock, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from '../scripted-model-server.js';
import { parseRead, squash, type PageElement } from './page-read.js';
import { actedHere, isFinalCheck, isRepair, lastUserText, pageToActOn, systemText, type RequestBody } from './request-read.js';

/**
 * A scripted model that edits a DokuWiki page the way an agent does, from the worker's own reads
 * (`read_page` with `filter: "all"`): signs in, opens the editor, replaces the text, gives the
 * summary, saves, and reports the page once it shows again. Values from the input are entered by
 * reference when the request offers them (`{{path}}` in the system prompt), else as literals.
 * With the run cache on, a repair (its tools include `step_done`) does what the page it is shown
 * still lacks, and a final check (`verify_replay` its only tool) answers from the final page, as
 * a model that sees only that page would: the page shown with the input's headings, no editor open.
 */
export interface WikiEdit {
  user: string;
  password: string;
  /** The page id, `namespace:page`. */
  page: string;
  /** The new wiki text, with line breaks. */
  text: string;
  summary: string;
}

export function wikiWorkflow(origin: string, host: string, page: string): Record<string, unknown> {
  return {
    name: 'Update a wiki page',
    prompt: 'Sign in to the wiki with the user and password from the input, open the page from the input, replace its whole text with the text from the input (keep its line breaks), save it with the summary from the input, and report the page id.',
    allowedDomains: [host],
    startUrl: `${origin}/doku.php?id=${encodeURIComponent(page)}`,
    payloadSchema: { type: 'object', required: ['user', 'password', 'page', 'text', 'summary'], properties: { password: { type: 'string', writeOnly: true } } },
    outputSchema: { type: 'object', required: ['page'], properties: { page: { type: 'string' } } },
  };
}

export function wikiAgent(input: WikiEdit): { script: (request: RecordedRequest) => ScriptedTurn; turns: string[] } {
  const turns: string[] = [];
  let saved = false;
  let waits = 0;
  const script = (request: RecordedRequest): ScriptedTurn => {
    const body = request.body as RequestBody;
    if (isFinalCheck(body)) return verify(body);
    const repair = isRepair(body);
    if (repair && actedHere(body)) return note('step done', turn(toolUseBlock('step_done', { note: 'did the step on this page' })));
    const seen = pageToActOn(body, repair);
    if (seen === undefined) return note('read', turn(readAll()));
    const system = systemText(body);
    const enter = (path: keyof WikiEdit) => (path === 'password' || system.includes(`{{${path}}}`) ? `{{${path}}}` : input[path]);
    const page = parseRead(seen);
    const named = (role: string, name: RegExp) => page.find((e) => e.role === role && e.ref && name.test(e.name));
    const signedIn = named('link', /^Log Out\b/);

    const username = named('textbox', /^Username$/);
    if (username) {
      return note('sign in', act(form(username, enter('user')), form(named('textbox', /^Password$/)!, enter('password')), click(named('button', /^Log In$/)!)));
    }
    if (!signedIn) {
      const login = named('link', /^Log In\b/);
      return login ? note('open the sign-in', act(click(login))) : finish('failed', undefined, 'no way to sign in');
    }
    const editor = page.find((e) => e.role === 'textbox' && e.ref && e.line.includes('multiline'));
    const save = named('button', /^Save$/);
    if (editor && save) {
      saved = true;
      return note('edit and save', act(form(editor, enter('text')), form(named('textbox', /^Edit summary$/)!, enter('summary')), click(save)));
    }
    const edit = named('link', /^(Edit this page|Create this page)\b/);
    if (repair && edit && saved) return note('step done', turn(toolUseBlock('step_done', { note: 'the page is saved' })));
    if (saved && edit) return note('report', finish('completed', { page: input.page }));
    if (edit) return note('open the editor', act(click(edit)));
    if (repair) return note('step done', turn(toolUseBlock('step_done', { note: 'nothing left to do on this page' })));
    // Nothing I know (a page still loading after a slow answer): look again a little later.
    if (++waits > 20) return finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`);
    return note('wait for the page', turn(memberBlock('wait', { duration: 1 }), readAll()));
  };
  const note = (kind: string, reply: ScriptedTurn) => {
    turns.push(kind);
    if (kind !== 'wait for the page') waits = 0;
    return reply;
  };
  const verify = (body: RequestBody): ScriptedTurn => {
    const page = parseRead(lastUserText(body));
    // The final page's view starts at its content: the headings of the text, and no editor open
    // (the header's user links may be past the view; a "Log In" link shown means signed out).
    const headings = [...input.text.matchAll(/^=+ *(.+?) *=+ *$/gm)].map((m) => squash(m[1]!));
    const shown = page.filter((e) => e.role === 'heading').map((e) => squash(e.name));
    const missing = headings.filter((h) => !shown.includes(h));
    const signedOut = page.some((e) => e.role === 'link' && /^Log In\b/.test(e.name));
    const editing = page.some((e) => e.role === 'textbox' && e.line.includes('multiline'));
    const matches = !signedOut && !editing && missing.length === 0;
    const reason = signedOut ? 'not signed in' : editing ? 'the editor is still open' : missing.length > 0 ? `the page lacks the headings ${missing.join(', ')}` : 'the page shows the new text';
    turns.push(`final check (${reason})`);
    return turn(toolUseBlock('verify_replay', { matches, reason, ...(matches ? { output: { page: input.page } } : {}) }));
  };
  return { script, turns };
}

const readAll = (): ScriptedContentBlock => memberBlock('read_page', { filter: 'all' });
const act = (...blocks: ScriptedContentBlock[]): ScriptedTurn => turn(...blocks, readAll());
const form = (element: PageElement, value: string): ScriptedContentBlock => memberBlock('form_input', { target: { type: 'ref', ref: element.ref }, value });
const click = (element: PageElement): ScriptedContentBlock => memberBlock('left_click', { target: { type: 'ref', ref: element.ref } });
