import type { Message, ToolResultBlock, UserBlock } from '../model/types.js';

/**
 * The request's messages: the history exactly as it is, with prompt-cache breakpoints on the
 * newest user turns. Only the breakpoints move from one request to the next (the API allows
 * that: they are not part of a thinking block's prefix); nothing else is changed, dropped or
 * shortened (docs/model.md#conversation-rules). Each request reads the prefix the previous one
 * wrote at its newest breakpoint.
 */
export function withCacheBreakpoints(history: readonly Message[], cachedUserTurns = 2): Message[] {
  const out = [...history];
  let marked = 0;
  for (let i = out.length - 1; i >= 0 && marked < cachedUserTurns; i--) {
    const message = out[i]!;
    if (message.role !== 'user' || message.content.length === 0) continue;
    const content = [...message.content];
    content[content.length - 1] = withCache(content[content.length - 1]!);
    out[i] = { role: 'user', content };
    marked++;
  }
  return out;
}

function withCache(block: UserBlock): UserBlock {
  if (block.type === 'tool_result') return { ...(block as ToolResultBlock), cache_control: { type: 'ephemeral' } };
  return { ...block, cache_control: { type: 'ephemeral' } };
}
