/** The limits of what the agent reads, and the few text helpers every part shares. */

/** An element's name, at most. */
export const NAME_MAX = 100;
/** A field's value, at most. */
export const VALUE_MAX = 200;
/** A select's options listed below it, at most. */
export const OPTIONS_MAX = 40;
/** Running text (a paragraph, a cell), at most. */
export const TEXT_MAX = 1000;

/** Whitespace runs (and no-break spaces) as one space, trimmed. */
export const squash = (s: unknown): string => String(s == null ? '' : s).replace(/[\s\u00a0]+/g, ' ').trim();
export const cut = (s: string, max: number): string => (s.length > max ? s.slice(0, max - 1) + '\u2026' : s);
export const quote = (s: string): string => '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
