/** The limits of what the agent reads, and the few text helpers every part shares. */

/** An element's name, at most. */
export const NAME_MAX = 100;
/** A field's value, at most. */
export const VALUE_MAX = 200;
/** A select's options listed below it, at most. */
export const OPTIONS_MAX = 40;
/** Running text (a paragraph, a cell), at most. */
export const TEXT_MAX = 1000;

/** Characters that draw nothing (zero-width spaces and joiners, the byte-order mark an editor keeps its caret in): a text of them alone is empty. */
const INVISIBLE = /[\u200b-\u200d\u2060\ufeff]/g;
/** Whitespace runs (and no-break spaces) as one space, trimmed; invisible characters left out. */
export const squash = (s: unknown): string => String(s == null ? '' : s).replace(INVISIBLE, '').replace(/[\s\u00a0]+/g, ' ').trim();
/** Text whose line breaks mean something (a textarea's value, pre-formatted text): each line kept, trailing spaces and runs of blank lines dropped. */
export const multiline = (s: unknown): string =>
  String(s == null ? '' : s).replace(INVISIBLE, '').replace(/\r\n?/g, '\n').replace(/[ \t\u00a0]+$/gm, '').replace(/\n{3,}/g, '\n\n').replace(/^\n+|\n+$/g, '');
export const cut = (s: string, max: number): string => (s.length > max ? s.slice(0, max - 1) + '\u2026' : s);
/** A quoted string of a read's line: one line whatever it holds (a line break is written `\n`). */
export const quote = (s: string): string => '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
