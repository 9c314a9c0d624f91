/**
 * What the real applications' scripted agents read of a request to the model: the conversation's
 * blocks, its latest text, its own last read. One copy for every agent (docs/testing.md).
 */

export interface Block {
  type: string;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
  tool_use_id?: string;
  is_error?: boolean;
  text?: string;
  content?: unknown;
}

export interface RequestBody {
  system?: string | Array<{ type: string; text?: string }>;
  tools?: Array<{ name?: string; type?: string }>;
  messages?: Array<{ role: string; content: unknown }>;
}

/** The replay's final check: a request whose only tool is `verify_replay`. */
export function isFinalCheck(body: RequestBody): boolean {
  return body.tools?.length === 1 && body.tools[0]!.name === 'verify_replay';
}

/** A repair request: the browser tools and the repair's own `step_done`. */
export function isRepair(body: RequestBody): boolean {
  return body.tools?.some((t) => t.name === 'step_done') === true;
}

/** The page a turn acts on: the agent's own last read or, in a repair, the page the latest message shows; none when the agent must read first. */
export function pageToActOn(body: RequestBody, repair: boolean): string | undefined {
  return ownRead(body) ?? (repair ? shownPage(body) : undefined);
}

/** Whether this conversation already holds an action of this model (anything but a read, a wait or `step_done`). */
export function actedHere(body: RequestBody): boolean {
  return (body.messages ?? []).some(
    (m) => m.role === 'assistant' && Array.isArray(m.content) && (m.content as Block[]).some((b) => b.type === 'tool_use' && !['read_page', 'wait', 'step_done'].includes(String(b.name))),
  );
}

/** The result of this model's own `read_page` `{filter: "all"}`, when that was its last call and this request answers it. */
export function ownRead(body: RequestBody): string | undefined {
  const messages = body.messages ?? [];
  const last = messages.at(-1);
  const asked = messages.at(-2);
  if (last?.role !== 'user' || asked?.role !== 'assistant' || !Array.isArray(asked.content)) return undefined;
  const read = (asked.content as Block[]).filter((b) => b.type === 'tool_use').at(-1);
  if (read?.name !== 'read_page' || read.input?.filter !== 'all') return undefined;
  const result = Array.isArray(last.content) ? (last.content as Block[]).find((b) => b.type === 'tool_result' && b.tool_use_id === read.id) : undefined;
  // Not run (an earlier action of the turn failed): the agent reads again.
  return result && !result.is_error ? textOf(result.content) : undefined;
}

/** The page a repair's latest message shows (after `This is the browser now.`), when it shows one. */
export function shownPage(body: RequestBody): string | undefined {
  const text = lastUserText(body);
  const at = text.lastIndexOf('This is the browser now.');
  return at >= 0 ? text.slice(at) : undefined;
}

export function lastUserText(body: RequestBody): string {
  const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
  return last ? textOf(last.content) : '';
}

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Block[])
    .map((b) => (b.type === 'text' ? (b.text ?? '') : b.type === 'tool_result' ? textOf(b.content) : ''))
    .filter(Boolean)
    .join('\n');
}

/** The request's system prompt as one text, whichever form it was sent in. */
export function systemText(body: RequestBody): string {
  return typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text ?? '').join('\n');
}
