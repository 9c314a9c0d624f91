import { createHash } from 'node:crypto';
import { canonical } from './fake-api-rules.js';

/**
 * Input-token accounting of the scripted model server (see fake-api-rules.ts): what a request
 * costs once the API's context management has been applied, and how much of it the prompt cache
 * serves. Estimates, consistent from one run to the next: enough to compare context settings
 * and to bound a run, not the API's exact count.
 */

type Json = Record<string, unknown>;

/** A computer or browser toolset carries a system prompt of its own (the docs give about this much). */
const TOOLSET_TOKENS: Record<string, number> = {
  computer_20250124: 735,
  computer_20251124: 735,
  computer_toolset_20260801: 900,
  browser_toolset_20260801: 1_400,
};
const PLACEHOLDER_TOKENS = 8;
const DEFAULT_CLEAR_TRIGGER = 100_000;
const DEFAULT_KEEP = 3;
const DEFAULT_COMPACT_TRIGGER = 150_000;
export const COMPACTION_SUMMARY = 'Summary of the conversation so far: the task, what was done and what the page showed.';

export interface Accounting {
  /** Input tokens billed at the full rate. */
  input: number;
  cacheRead: number;
  cacheWrite: number;
  /** Everything the model saw: input + cacheRead + cacheWrite. */
  total: number;
  /** Output tokens billed: every block the model wrote (set when the answer is made). */
  output?: number;
  cleared?: { tokens: number; toolUses: number };
  /** The request passed the compaction trigger: the response carries a compaction block. */
  compact: boolean;
  /** The compaction's own sampling, billed apart from the answer (set when the answer is made). */
  compaction?: { input: number; output: number };
}

/** Prefixes written to the cache, across the requests of one server. */
export type PromptCache = Set<string>;

const textTokens = (text: string) => Math.ceil(text.length / 4);

const imageTokenCache = new Map<string, number>();

/** Width × height / 750, from a PNG's or a JPEG's header. */
export function imageTokens(base64: string): number {
  const known = imageTokenCache.get(base64);
  if (known !== undefined) return known;
  const tokens = countImageTokens(base64);
  if (imageTokenCache.size > 1_000) imageTokenCache.clear();
  imageTokenCache.set(base64, tokens);
  return tokens;
}

function countImageTokens(base64: string): number {
  const bytes = Buffer.from(base64.slice(0, 87_380), 'base64');
  const size = imageSize(bytes);
  if (!size) return Math.ceil(bytes.length / 100);
  return Math.ceil((size.width * size.height) / 750);
}

function imageSize(b: Buffer): { width: number; height: number } | undefined {
  if (b.length > 24 && b.readUInt32BE(0) === 0x89504e47) return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let at = 2;
  while (at + 9 < b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1]!;
    const length = b.readUInt16BE(at + 2);
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC): the frame header holds the size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
    }
    at += 2 + length;
  }
  return undefined;
}

function blockTokens(block: Json): number {
  switch (block.type) {
    case 'text':
      return textTokens(String(block.text ?? ''));
    case 'image': {
      const source = block.source as { data?: unknown } | undefined;
      return typeof source?.data === 'string' ? imageTokens(source.data) : 0;
    }
    case 'tool_result': {
      const content = Array.isArray(block.content) ? (block.content as Json[]) : [];
      return 5 + content.reduce((sum, b) => sum + blockTokens(b), 0);
    }
    case 'thinking':
      return 20 + textTokens(String(block.thinking ?? ''));
    case 'compaction':
      return textTokens(String(block.content ?? ''));
    default:
      return textTokens(canonical(block));
  }
}

/**
 * Output tokens as the API bills them: everything the model wrote, its thinking, its text and its
 * tool calls, at the same estimate as input (a few more for each block's framing).
 */
export function outputTokens(content: readonly Json[]): number {
  return content.reduce((sum, block) => sum + 3 + (block.type === 'thinking' ? blockTokens(block) : block.type === 'text' ? blockTokens(block) : textTokens(canonical(block))), 0);
}

interface Segment {
  key: string;
  tokens: number;
  breakpoint: boolean;
}

export function account(body: Json, cache: PromptCache): Accounting {
  const edits = ((body.context_management as { edits?: Json[] } | undefined)?.edits ?? []) as Json[];
  let messages = (Array.isArray(body.messages) ? body.messages : []) as Array<{ role: string; content: Json[] | string }>;
  messages = messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content }));

  // What the API shows the model after a compaction: the summary, then what followed it.
  const compacted = lastCompaction(messages);
  if (compacted) messages = [{ role: 'assistant', content: [compacted.block, ...compacted.rest] }, ...messages.slice(compacted.index + 1)];

  const head: Segment[] = [];
  for (const tool of (Array.isArray(body.tools) ? body.tools : []) as Json[]) {
    head.push({ key: `tool:${canonical(tool)}`, tokens: (TOOLSET_TOKENS[String(tool.type)] ?? 0) + textTokens(canonical(tool)), breakpoint: Boolean(tool.cache_control) });
  }
  const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : ((body.system ?? []) as Json[]);
  for (const block of system) head.push({ key: `system:${canonical(block)}`, tokens: blockTokens(block), breakpoint: Boolean(block.cache_control) });

  const full = head.reduce((s, x) => s + x.tokens, 0) + messages.reduce((s, m) => s + (m.content as Json[]).reduce((t, b) => t + blockTokens(b), 0), 0);
  const clearing = edits.find((e) => e.type === 'clear_tool_uses_20250919');
  const cleared = clearing ? clearToolUses(messages, clearing, full) : undefined;

  const segments = [...head];
  for (const m of messages) {
    for (const block of m.content as Json[]) {
      const shown = cleared?.blocks.get(block) ?? block;
      segments.push({ key: `${m.role}:${canonical(shown)}`, tokens: blockTokens(shown), breakpoint: Boolean(block.cache_control) });
    }
  }

  let hash = createHash('sha256').update(String(body.model ?? '')).digest('hex');
  let offset = 0;
  let read = 0;
  let lastBreakpoint = 0;
  const written: string[] = [];
  for (const segment of segments) {
    hash = createHash('sha256').update(hash).update(segment.key).digest('hex');
    offset += segment.tokens;
    if (cache.has(hash)) read = offset;
    if (segment.breakpoint) {
      lastBreakpoint = offset;
      written.push(hash);
    }
  }
  for (const key of written) cache.add(key);
  const write = Math.max(0, lastBreakpoint - read);
  const compactEdit = edits.find((e) => e.type === 'compact_20260112');
  const compactAt = (compactEdit?.trigger as { value?: number } | undefined)?.value ?? DEFAULT_COMPACT_TRIGGER;
  return {
    input: offset - read - write,
    cacheRead: read,
    cacheWrite: write,
    total: offset,
    ...(cleared && cleared.tokens > 0 ? { cleared: { tokens: cleared.tokens, toolUses: cleared.toolUses } } : {}),
    compact: Boolean(compactEdit) && offset > compactAt,
  };
}

function lastCompaction(messages: Array<{ role: string; content: Json[] | string }>): { index: number; block: Json; rest: Json[] } | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i]!.content as Json[];
    const at = content.findIndex((b) => b.type === 'compaction');
    if (at >= 0) return { index: i, block: content[at]!, rest: content.slice(at + 1) };
  }
  return undefined;
}

/**
 * `clear_tool_uses_20250919`: past its trigger, the oldest tool results, all but the newest
 * `keep`, are shown as a placeholder, in batches of at least `clear_at_least` tokens.
 */
function clearToolUses(messages: Array<{ role: string; content: Json[] | string }>, edit: Json, full: number): { blocks: Map<Json, Json>; tokens: number; toolUses: number } | undefined {
  const trigger = (edit.trigger as { value?: number } | undefined)?.value ?? DEFAULT_CLEAR_TRIGGER;
  if (full <= trigger) return undefined;
  const keep = (edit.keep as { value?: number } | undefined)?.value ?? DEFAULT_KEEP;
  const atLeast = (edit.clear_at_least as { value?: number } | undefined)?.value ?? 0;
  const clearInputs = edit.clear_tool_inputs === true;
  const results: Json[] = [];
  const uses = new Map<string, Json>();
  for (const m of messages) {
    for (const block of m.content as Json[]) {
      if (block.type === 'tool_result') results.push(block);
      if (block.type === 'tool_use') uses.set(String(block.id), block);
    }
  }
  const clearable = results.slice(0, Math.max(0, results.length - keep));
  let upTo = 0;
  let batch = 0;
  for (let i = 0; i < clearable.length; i++) {
    batch += blockTokens(clearable[i]!) - PLACEHOLDER_TOKENS;
    if (batch >= Math.max(atLeast, 1)) {
      upTo = i + 1;
      batch = 0;
    }
  }
  const blocks = new Map<Json, Json>();
  let tokens = 0;
  for (const result of clearable.slice(0, upTo)) {
    const placeholder = { ...result, content: [{ type: 'text', text: '[tool result cleared]' }] };
    tokens += blockTokens(result) - blockTokens(placeholder);
    blocks.set(result, placeholder);
    const use = uses.get(String(result.tool_use_id));
    if (clearInputs && use) {
      const bare = { ...use, input: {} };
      tokens += blockTokens(use) - blockTokens(bare);
      blocks.set(use, bare);
    }
  }
  return { blocks, tokens, toolUses: upTo };
}
