import type { BrowserSession } from '../browser/types.js';

/**
 * Typing text that holds a secret (docs/secrets.md#fields). Every element that takes one of its
 * characters is marked first, so it reads as the model's `{{path}}` text in every read of the
 * page whatever it holds later: a code widget that moves the focus to the next box after each
 * digit gets each box marked, not only the first one.
 *
 * One character at a time, the focused element marked before each: the focus is where the
 * browser sends the next key, whatever the page's listeners do with the key events.
 */

/**
 * What a marked field reads as: the model's own text (its placeholders), cut short. Every read
 * it shows up in is redacted on its way to the model and the logs, like any other page text.
 */
export const SHOWN_AS_MAX = 200;

export function shownAs(text: string): string {
  return text.length > SHOWN_AS_MAX ? `${text.slice(0, SHOWN_AS_MAX - 1)}…` : text;
}

export async function typeSecretText(session: BrowserSession, text: string, label: string, signal: AbortSignal): Promise<void> {
  for (const char of text) {
    if (signal.aborted) return;
    await session.tab()?.hideText(null, signal, label);
    await session.typeText(char, signal);
  }
}
