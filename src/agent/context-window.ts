import type { Message, TextBlock, ToolResultBlock, ToolResultContent, UserBlock } from '../model/types.js';

/**
 * What the model is sent each turn, derived from the full history without changing it.
 *
 * Tokens follow pixels, and every screenshot stays in the context until removed, so old
 * screenshots are dropped — but in chunks: removing one image per step would change the
 * prompt prefix every step and defeat prompt caching. With `keepImages` 3 and `chunk` 5 the
 * prefix (and its cache) stays the same for five steps at a time.
 */
export interface ContextWindowOptions {
  /** Screenshots always kept, newest first. */
  keepImages: number;
  /** Long page reads (read_page, get_page_text, …) always kept, newest first. */
  keepReads?: number;
  /** Old screenshots (and old long reads) are removed this many at a time. */
  chunk: number;
  /** Cache breakpoints on the most recent user turns (the system prompt and tools hold two). */
  cachedUserTurns: number;
}

export const DEFAULT_CONTEXT_WINDOW: ContextWindowOptions = { keepImages: 3, keepReads: 3, chunk: 5, cachedUserTurns: 2 };

const OMITTED: TextBlock = { type: 'text', text: '[older screenshot omitted]' };
/** A text result longer than this is a page read that old turns may drop (short acknowledgments stay). */
export const LONG_READ_CHARS = 1_500;

export function prepareMessages(history: readonly Message[], options: ContextWindowOptions = DEFAULT_CONTEXT_WINDOW): Message[] {
  let total = 0;
  for (const message of history) if (message.role === 'user') total += countImages(message.content);
  let toRemove = Math.max(0, total - options.keepImages);
  toRemove -= toRemove % options.chunk;

  const out: Message[] = history.map((message) => {
    if (message.role !== 'user' || toRemove === 0) return message;
    const content = message.content.map((block): UserBlock => {
      if (toRemove === 0) return block;
      if (block.type === 'image') {
        toRemove--;
        return OMITTED;
      }
      if (block.type === 'tool_result' && block.content.some((b) => b.type === 'image')) {
        const inner = block.content.map((b): ToolResultContent => {
          if (b.type === 'image' && toRemove > 0) {
            toRemove--;
            return OMITTED;
          }
          return b;
        });
        return { ...block, content: inner };
      }
      return block;
    });
    return { role: 'user', content };
  });

  pruneReads(out, options);

  // Rolling breakpoints on the last user turns: each turn reads the prefix the previous wrote.
  let marked = 0;
  for (let i = out.length - 1; i >= 0 && marked < options.cachedUserTurns; i--) {
    const message = out[i]!;
    if (message.role !== 'user' || message.content.length === 0) continue;
    const content = [...message.content];
    content[content.length - 1] = withCache(content[content.length - 1]!);
    out[i] = { role: 'user', content };
    marked++;
  }
  return out;
}

function countImages(blocks: readonly UserBlock[]): number {
  let n = 0;
  for (const block of blocks) {
    if (block.type === 'image') n++;
    else if (block.type === 'tool_result') n += block.content.filter((b) => b.type === 'image').length;
  }
  return n;
}

function withCache(block: UserBlock): UserBlock {
  if (block.type === 'tool_result') return { ...(block as ToolResultBlock), cache_control: { type: 'ephemeral' } };
  return { ...block, cache_control: { type: 'ephemeral' } };
}

/**
 * Text results follow the same rule as screenshots: a long page read is worth many screenshots
 * of tokens, and what the page said three reads ago is rarely needed. The newest reads stay;
 * older ones go in chunks, so the cached prefix survives several steps.
 */
function pruneReads(messages: Message[], options: ContextWindowOptions): void {
  const keep = options.keepReads ?? Number.POSITIVE_INFINITY;
  if (!Number.isFinite(keep)) return;
  const isLong = (block: UserBlock) => block.type === 'tool_result' && !block.is_error && block.content.some((b) => b.type === 'text' && b.text.length > LONG_READ_CHARS);
  let total = 0;
  for (const message of messages) if (message.role === 'user') total += message.content.filter(isLong).length;
  let toRemove = Math.max(0, total - keep);
  toRemove -= toRemove % options.chunk;
  for (let i = 0; i < messages.length && toRemove > 0; i++) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    messages[i] = {
      role: 'user',
      content: message.content.map((block) => {
        if (toRemove === 0 || !isLong(block) || block.type !== 'tool_result') return block;
        toRemove--;
        return {
          ...block,
          content: block.content.map((b) => (b.type === 'text' && b.text.length > LONG_READ_CHARS ? { type: 'text', text: `[older page read omitted: ${b.text.length} characters]` } : b)),
        };
      }),
    };
  }
}
