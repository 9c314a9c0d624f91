import type { AssistantBlock, TextBlock } from '../contract/recording.js';
/**
 * What a model's answer says in words, for the step timeline and the log: its thinking (the
 * summary it showed) and its text. Read alike for the agent's turns and a repair's.
 */

/** The thinking the model showed (its summary): why it acted. */
export function thinkingOf(content: AssistantBlock[]): string | undefined {
  const text = content
    .map((b) => (b.type === 'thinking' ? (b as { thinking?: unknown }).thinking : undefined))
    .filter((t): t is string => typeof t === 'string')
    .join('\n')
    .trim();
  return text || undefined;
}

/** The text blocks of the answer, joined. */
export function textOf(content: AssistantBlock[]): string | undefined {
  const text = content
    .filter((b): b is TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
  return text || undefined;
}
