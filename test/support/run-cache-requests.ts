import { lastObservation } from '../../demo/workflow.js';
import type { RecordedRequest, ScriptedContentBlock } from './scripted-model-server.js';
import { toolUseBlock } from './scripted-model-server.js';

/**
 * The run cache's own model requests as a scripted model server sees them
 * (docs/run-cache.md#the-final-check, #repair-not-restart), so a script can answer each as a
 * model would:
 *
 * - **The final check**: one tool, `verify_replay` (`{ matches, reason, output? }`); a system
 *   prompt and one user message: what was replayed, then the final page (`The final page: …`)
 *   and a screenshot.
 * - **A repair**: the action space's tools (the browser toolset, or computer use) plus
 *   `step_done` (`{ note? }`) and `flow_changed` (`{ reason }`); a conversation of its own. Its
 *   first user message says what the step was for (`The step to do now, as the earlier run did
 *   it on <page>:` then the cached actions, numbered, each with its element as that run saw it
 *   and its values by name, e.g. `form_input on textbox "City" (input type=text, …): value
 *   "{{city}}"`; or, for values the earlier run never entered, `The step to do now: enter
 *   {{tracker}} on this page`), then `This is the browser now.`, the page (open dialogs first,
 *   then the interactive elements in view with their references) and a screenshot. A later
 *   message (at most two more) answers the tool calls and says why the step is not done yet
 *   (`The step is not done yet: …`), then the page again.
 */

function toolNames(request: RecordedRequest): string[] {
  return ((request.body as { tools?: Array<{ name?: string }> }).tools ?? []).map((t) => t.name ?? '');
}

/** Whether a request is a replay's final check: its one tool is `verify_replay`. */
export function isFinalCheck(request: RecordedRequest): boolean {
  const tools = toolNames(request);
  return tools.length === 1 && tools[0] === 'verify_replay';
}

/** Whether a request is a repair of a cached step: its tools include `step_done` and `flow_changed`. */
export function isRepair(request: RecordedRequest): boolean {
  const tools = toolNames(request);
  return tools.includes('step_done') && tools.includes('flow_changed');
}

/** The first message of a repair: what the step was for (before the page). */
export function repairBrief(request: RecordedRequest): string {
  const messages = (request.body as { messages?: Array<{ role: string; content: Array<{ type: string; text?: string }> }> }).messages ?? [];
  const first = messages[0]?.content.find((b) => b.type === 'text')?.text ?? '';
  return first.split('This is the browser now.')[0] ?? '';
}

/** The input names the step to do enters, as its brief lists them (`"{{city}}"`). */
export function repairValues(request: RecordedRequest): string[] {
  const brief = repairBrief(request);
  const step = brief.slice(brief.indexOf('The step to do now')).split('\n\n')[0]!;
  return [...step.matchAll(/\{\{([^}]+)\}\}/g)].map((m) => m[1]!);
}

/** Whether the worker said, in the repair's latest message, that the page does not match the earlier run's next steps. */
export function repairLost(request: RecordedRequest): boolean {
  return lastObservation(request.body).includes('The step is not done yet: the page does not match what the earlier run did next');
}

/** The page part of the latest message (after `This is the browser now.`, when there is one). */
export function pageSeen(request: RecordedRequest): string {
  return lastObservation(request.body).split('This is the browser now.').at(-1)!;
}

/** `step_done`, as a block to end a repair's turn with. */
export function stepDone(note = 'Done.'): ScriptedContentBlock {
  return toolUseBlock('step_done', { note });
}

/** `flow_changed`, as a block. */
export function flowChanged(reason: string): ScriptedContentBlock {
  return toolUseBlock('flow_changed', { reason });
}
