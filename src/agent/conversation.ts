import type { Message, ToolResultBlock, UserBlock } from '../model/types.js';
import type { TokenUsage, TurnNotes } from '../contract/recording.js';

/**
 * The conversation's rules on the loop's side (docs/model.md#conversation-rules): what a request
 * sends, and when a conversation must end rather than grow past the model's window.
 */

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

/**
 * Share of the context window after which a run whose context the API does not manage ends
 * (docs/model.md#context-settings): the next turns would overflow it, and no earlier turn may be
 * edited to make room.
 */
export const UNMANAGED_CONTEXT_LIMIT = 0.8;

export function contextOverflow(response: { usage: TokenUsage; notes?: TurnNotes }): string | undefined {
  const context = response.notes?.context;
  if (!context || context.managed) return undefined;
  const { inputTokens, cacheReadInputTokens, cacheCreationInputTokens } = response.usage;
  const used = inputTokens + cacheReadInputTokens + cacheCreationInputTokens;
  const limit = Math.floor(context.maxInputTokens * UNMANAGED_CONTEXT_LIMIT);
  if (used <= limit) return undefined;
  return `the conversation holds ${used} input tokens, past ${limit} (${UNMANAGED_CONTEXT_LIMIT * 100}% of the model's ${context.maxInputTokens}-token context window), and the model has no context management: the run ends before the context overflows`;
}
