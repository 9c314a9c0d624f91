import type { HumanExchange } from '../contract/output.js';
import { ExecutionError } from '../contract/errors.js';
import { grantsApproval } from '../domain/human-protocol.js';
import type { ImageBlock, ToolDefinition, ToolResultBlock } from '../model/types.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { HumanGate, HumanRequest } from '../execution/human.js';
import { HUMAN_KINDS, type HumanKind } from '../contract/human.js';
import type { TextBlock, ToolUseBlock } from '../contract/recording.js';

/**
 * `ask_human` (docs/human-in-the-loop.md): the model's way to ask a person a question, ask
 * approval for an action the workflow gates, or hand the browser to a person for a while. The
 * loop offers it only when the run may wait for a person; the wait itself (the API told, the
 * answers stream read, the deadline paused) is the runner's, behind `HumanGate`.
 */

export const ASK_HUMAN_TOOL = 'ask_human';

export const ASK_HUMAN_DEFINITION: ToolDefinition = {
  name: ASK_HUMAN_TOOL,
  description: [
    'Ask a person and wait for their answer. kind "question": something only a person knows.',
    'kind "approval": ask before an action that needs approval; the person approves or denies (only an approval lets you take the action), so give the choices "approve" and "deny".',
    'kind "takeover": ask a person to act in the browser themselves (a CAPTCHA, a sign-in that needs their phone) and say "done" when finished.',
    'The answer comes back with a fresh view of the page. A person may take a long time; ask only when you must.',
  ].join(' '),
  input_schema: {
    type: 'object',
    properties: {
      question: { type: 'string', description: 'What to ask, in full sentences a person can act on.' },
      kind: { type: 'string', enum: [...HUMAN_KINDS], description: 'Default "question".' },
      choices: { type: 'array', items: { type: 'string' }, description: 'Answers to offer as buttons (a person may still write another).' },
    },
    required: ['question'],
    additionalProperties: false,
  },
};

export interface AskHuman {
  /** Runs one `ask_human` call: the result for the model and the images it carries. */
  handle(call: ToolUseBlock, step: number, signal: AbortSignal): Promise<{ result: ToolResultBlock; images: number }>;
  /** Whether the last approval asked was refused: a run the model then fails is `approval_denied`. */
  readonly denied: boolean;
  /** Every question of the run so far, answered or not. */
  readonly exchanges: readonly HumanExchange[];
}

export function createAskHuman(deps: {
  gate: HumanGate;
  events: ExecutionEventSink;
  /** The page as it is now, for the model (the action space's opening view). */
  view(signal: AbortSignal): Promise<Array<TextBlock | ImageBlock>>;
  now: () => number;
}): AskHuman {
  const exchanges: HumanExchange[] = [];
  let denied = false;
  return {
    get denied() {
      return denied;
    },
    get exchanges() {
      return exchanges;
    },
    async handle(call, step, signal) {
      const parsed = parseRequest(call.input);
      if (typeof parsed === 'string') {
        deps.events.emit('action', { step, by: 'model', tool: ASK_HUMAN_TOOL, action: ASK_HUMAN_TOOL, input: call.input, ok: false, error: parsed });
        return { result: textResult(call, parsed, true), images: 0 };
      }
      const exchange: HumanExchange = { ...parsed, answer: null, by: null, askedAt: new Date(deps.now()).toISOString(), answeredAt: null };
      exchanges.push(exchange);
      const answer = await deps.gate.ask(parsed, signal);
      exchange.answer = answer.answer;
      exchange.by = answer.by;
      exchange.answeredAt = new Date(deps.now()).toISOString();
      let text = `${answer.by ? `${answer.by} answered` : 'The person answered'}: ${answer.answer}`;
      if (answer.decision && answer.decision !== answer.answer) text += ` (their choice: ${answer.decision})`;
      if (parsed.kind === 'approval') {
        denied = !grantsApproval(answer);
        text += denied
          ? '\nThis is not an approval: do not take the action. Unless the task can be done without it, call finish with status "failed" and say that approval was denied.'
          : '\nApproved: you may take the action.';
      }
      if (parsed.kind === 'takeover') text += '\nThe person has finished acting in the browser. Continue from the page as they left it.';
      const view = await deps.view(signal);
      const images = view.filter((b) => b.type === 'image').length;
      return { result: { type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: `${text}\nThe page now:` }, ...view] }, images };
    },
  };
}

function parseRequest(input: unknown): HumanRequest | string {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return 'ask_human expects an object with "question"';
  const { question, kind = 'question', choices } = input as Record<string, unknown>;
  if (typeof question !== 'string' || question.trim() === '') return 'ask_human: "question" must be a non-empty string';
  if (typeof kind !== 'string' || !(HUMAN_KINDS as readonly string[]).includes(kind)) return `ask_human: "kind" must be one of ${HUMAN_KINDS.join(', ')}`;
  if (choices !== undefined && (!Array.isArray(choices) || choices.some((c) => typeof c !== 'string' || c.trim() === ''))) return 'ask_human: "choices" must be a list of non-empty strings';
  const list = choices as string[] | undefined;
  return { kind: kind as HumanKind, question: question.trim(), choices: list && list.length > 0 ? list.map((c) => c.trim()) : null };
}

function textResult(call: ToolUseBlock, text: string, isError: boolean): ToolResultBlock {
  return { type: 'tool_result', tool_use_id: call.id, ...(isError ? { is_error: true } : {}), content: [{ type: 'text', text }] };
}

/** The reason a run ends when nobody answered in time. */
export function humanTimeout(timeoutMs: number): ExecutionError {
  return new ExecutionError('human_timeout', `no person answered within ${timeoutMs} ms`);
}
