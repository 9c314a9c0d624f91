import { lastObservation } from '../../demo/workflow.js';
import { CHANGED_FLOW_PAGES, FLOW_PAGES } from './flow-app.js';
import { flowChanged, isFinalCheck, isRepair, pageSeen, repairLost, repairValues, stepDone } from './run-cache-requests.js';
import { delayed, finish, memberBlock, toolUse, turn, type RecordedRequest, type ScriptedContentBlock, type ScriptedTurn } from './scripted-model-server.js';

/**
 * A scripted model for the flow app (flow-app.ts) that acts on what it is shown, as a model
 * does: it knows which input value each field's label asks for (the labels of every version of
 * the site, as a model reads "Mobile or landline" as the phone number), fills the fields in view
 * by name, closes a dialog in the way, presses the page's button and reads the next page; it
 * reports the application number when the application is filed.
 *
 * In a repair (run-cache-requests.ts) it does the step it is asked for on the page it is shown
 * and calls `step_done`; when the page does not ask for the step's value (its page is gone) it
 * calls `step_done` at once, saying so; when the worker says the page matches nothing the
 * earlier run did next, it calls `flow_changed`. In the final check it compares the filed
 * application it is shown with its input.
 */
export type FlowInput = Record<string, string>;

/** Which input path a label asks for, in every version of the site. */
const LABELS = new Map<string, string>([
  ...FLOW_PAGES.flatMap((p) => [[p.label, p.name], [p.relabel, p.name]] as Array<[string, string]>),
  ...CHANGED_FLOW_PAGES.flatMap((p) => p.fields.map((f) => [f.label, f.name] as [string, string])),
]);

const BUTTONS = ['Next', 'Continue', 'Submit application', 'Send application', 'Send the application'];

export interface FlowAgentOptions {
  /** A model's latency per turn (the bench), in ms. */
  latencyMs?: number;
}

export function flowAgent(input: FlowInput, options: FlowAgentOptions = {}) {
  const answer = (t: ScriptedTurn): ScriptedTurn => (options.latencyMs && !('status' in t) && !('hang' in t) ? delayed(t, options.latencyMs) : t);
  return (request: RecordedRequest): ScriptedTurn => answer(respond(request, input));
}

function respond(request: RecordedRequest, input: FlowInput): ScriptedTurn {
  if (isFinalCheck(request)) return check(lastObservation(request.body), input);
  const seen = pageSeen(request);
  const repair = isRepair(request);
  const filed = /Application (APP-\d+) was filed/.exec(seen)?.[1];
  if (repair && repairLost(request)) return turn(flowChanged('The pages after this one are new: none of them is a page the earlier run went through.'));
  if (filed) return repair ? turn(stepDone('The application is filed.')) : finish('completed', { application: filed });
  const ref = (line: string) => ({ type: 'ref', ref: /\[(ref_\d+)\]/.exec(line)![1]! });
  const lines = seen.split('\n').map((l) => l.trim());
  const dialog = lines.find((l) => l.startsWith('button "Accept and continue"'));
  if (dialog) {
    // What is under the dialog cannot be used until it is closed: close it, and look again.
    return turn(memberBlock('left_click', { target: ref(dialog) }), memberBlock('read_page', { filter: 'interactive' }));
  }
  const fields: Array<{ line: string; path: string }> = [];
  for (const line of lines) {
    const m = /^(textbox|combobox|listbox) "([^"]+)" \[ref_\d+\]/.exec(line);
    const path = m ? LABELS.get(m[2]!) : undefined;
    if (m && path && input[path] !== undefined) fields.push({ line, path });
  }
  if (repair) {
    const wanted = repairValues(request);
    // The step enters a value this page does not ask for: the page it was on is gone.
    if (wanted.length > 0 && !wanted.some((path) => fields.some((f) => f.path === path))) return turn(stepDone(`This page does not ask for ${wanted.map((p) => `{{${p}}}`).join(', ')}: its page is gone.`));
  }
  const calls: ScriptedContentBlock[] = [];
  for (const f of fields) {
    const value = /value="([^"]*)"/.exec(f.line)?.[1];
    if (value !== input[f.path]) calls.push(memberBlock('form_input', { target: ref(f.line), value: `{{${f.path}}}` }));
  }
  const button = lines.find((l) => BUTTONS.some((b) => l.startsWith(`button "${b}" [`)));
  if (button) calls.push(memberBlock('left_click', { target: ref(button) }));
  if (calls.length === 0) {
    if (repair) return turn(flowChanged(`Nothing on this page fits the step: ${seen.slice(0, 200)}`));
    const read = JSON.stringify(request.body).includes('"name":"get_page_text"');
    return read ? finish('failed', undefined, `lost on the page: ${seen.slice(0, 300)}`) : turn(memberBlock('get_page_text'));
  }
  // The filed application is text: the last page's button is followed by a read of the text.
  const last = button !== undefined && !/"(Next|Continue)"/.test(button);
  calls.push(last ? memberBlock('get_page_text') : memberBlock('read_page', { filter: 'interactive' }));
  if (repair) calls.push(stepDone('Done on the page as it is now.'));
  return turn(...calls);
}

/** The final check: the filed application it is shown (`term "Full name"` then `definition "…"`) against the input. */
function check(seen: string, input: FlowInput): ScriptedTurn {
  const filed = /Application (APP-\d+) was filed/.exec(seen)?.[1];
  if (!filed) return toolUse('verify_replay', { matches: false, reason: 'The page shows no filed application.' });
  const lines = seen.split('\n').map((l) => l.trim());
  const wrong: string[] = [];
  let shown = 0;
  lines.forEach((line, i) => {
    const term = /^term "([^"]+)"/.exec(line)?.[1];
    const path = term ? LABELS.get(term) : undefined;
    if (!path) return;
    shown++;
    const value = /^definition "([^"]*)"/.exec(lines[i + 1] ?? '')?.[1];
    if (value !== input[path]) wrong.push(`${term} is ${JSON.stringify(value)}`);
  });
  const matches = shown > 0 && wrong.length === 0;
  return toolUse('verify_replay', { matches, reason: matches ? `Application ${filed} shows the input.` : `Application ${filed}: ${wrong.join(', ') || 'no value shown'}.`, ...(matches ? { output: { application: filed } } : {}) });
}
