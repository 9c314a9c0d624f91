/**
 * The closed set of derivations a run cache binds a value to (docs/run-cache.md#sources): how a
 * literal the model wrote is computed from one input value, and computed again from the next
 * input's. Each derivation applies only to a value of its own shape, so one value never gives
 * the same literal two ways: a word to a value of several words on one line, a prefix that ends
 * inside a word, a line to several lines without blank ones, a paragraph to blank-line-separated
 * text, an item to a list, a case change to a value it changes. Pure.
 */
import type { Derivation } from '../contract/run-cache.js';

/** Every derivation that gives `literal` from `value` (none, one, or several: the caller keeps only one). */
export function derivationsOf(value: string, literal: string): Derivation[] {
  // The value as it is: the whole value, however else it could be written the same.
  if (literal === value) return value === '' ? [] : [{ how: 'whole' }];
  return candidates(value, literal).filter((d) => deriveValue(value, d) === literal);
}

function candidates(value: string, literal: string): Derivation[] {
  const out: Derivation[] = [{ how: 'whole' }];
  for (const to of ['lower', 'upper', 'title'] as const) out.push({ how: 'case', to });
  wordsOf(value)?.forEach((_w, index) => out.push({ how: 'word', index }));
  if (literal.length >= 3) out.push({ how: 'prefix', length: literal.length });
  const unit = pieceUnit(value);
  if (unit) for (let index = 0; index < pieceCount(value, unit); index++) out.push({ how: 'piece', unit, index });
  const number = numberFormat(literal);
  if (number) out.push(number);
  out.push(...dateFormats(literal));
  return out;
}

/** The value a derivation gives; undefined where it does not apply to this value's shape. */
export function deriveValue(value: string, d: Derivation): string | undefined {
  switch (d.how) {
    case 'whole':
      return value === '' ? undefined : value;
    case 'case': {
      return d.to === 'lower' ? value.toLowerCase() : d.to === 'upper' ? value.toUpperCase() : titleCase(value);
    }
    case 'word':
      return wordsOf(value)?.[d.index];
    case 'prefix': {
      if (d.length >= value.length) return undefined;
      const cut = value.slice(0, d.length);
      // Inside a word: a prefix that ends at a word's end is that word (or several).
      return isWordChar(value[d.length - 1]) && isWordChar(value[d.length]) && cut.trim() === cut ? cut : undefined;
    }
    case 'piece':
      return pieceUnit(value) === d.unit ? piecesOf(value, d.unit)[d.index] : undefined;
    case 'number': {
      const n = asPlainNumber(value);
      return n === undefined ? undefined : formatNumber(n, d);
    }
    case 'date':
      return formatDate(value, d.format);
  }
}

/** The words of a value of two words or more on one line; undefined for any other value. */
function wordsOf(value: string): string[] | undefined {
  if (/\n/.test(value)) return undefined;
  const words = value.trim().split(/\s+/).filter(Boolean);
  return words.length >= 2 ? words : undefined;
}

function isWordChar(ch: string | undefined): boolean {
  return ch !== undefined && /[\p{L}\p{N}]/u.test(ch);
}

function titleCase(value: string): string {
  return value.toLowerCase().replace(/(^|[^\p{L}\p{N}])(\p{L})/gu, (_m, before: string, letter: string) => before + letter.toUpperCase());
}

/** How a value of several pieces is cut: paragraphs where it has blank lines, a list where every line is an item, else lines. */
function pieceUnit(value: string): 'line' | 'paragraph' | 'item' | undefined {
  const text = value.replace(/\r\n?/g, '\n').trim();
  if (!text.includes('\n')) return undefined;
  if (/\n[ \t]*\n/.test(text)) return 'paragraph';
  const lines = text.split('\n');
  return lines.every((l) => ITEM.test(l)) ? 'item' : 'line';
}

const ITEM = /^\s*(?:[-*•]|\d+[.)])\s+/;

function piecesOf(value: string, unit: 'line' | 'paragraph' | 'item'): string[] {
  const text = value.replace(/\r\n?/g, '\n').trim();
  if (unit === 'paragraph') return text.split(/\n[ \t]*\n/).map((p) => p.trim()).filter(Boolean);
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return unit === 'item' ? lines.map((l) => l.replace(ITEM, '')) : lines;
}

/** How many pieces of a unit a value has: 0 when it is not cut that way. */
export function pieceCount(value: string, unit: 'line' | 'paragraph' | 'item'): number {
  return pieceUnit(value) === unit ? piecesOf(value, unit).length : 0;
}

/** A number as plain text (`1234.5`, `-7`): what a number input value is. */
function asPlainNumber(value: string): number | undefined {
  const t = value.trim();
  return /^[+-]?(\d+\.?\d*|\.\d+)$/.test(t) ? Number(t) : undefined;
}

/** The format a literal writes a number in (`€ 1.234,50`), read from it; undefined when it is no number. */
function numberFormat(literal: string): Derivation | undefined {
  const m = /^(\D{0,8}?)(\d{1,3}(?:([,. '])\d{3})+|\d+)(?:([.,])(\d+))?(\D{0,8})$/.exec(literal);
  if (!m) return undefined;
  const group = (m[3] ?? '') as Extract<Derivation, { how: 'number' }>['group'];
  const point = (m[4] ?? (group === '.' ? ',' : '.')) as '.' | ',';
  if (group !== '' && group === point) return undefined;
  if (/[\d+-]/.test(m[1]!) || /\d/.test(m[6]!)) return undefined;
  return { how: 'number', decimals: m[5]?.length ?? 0, group, point, before: m[1]!, after: m[6]! };
}

function formatNumber(n: number, d: Extract<Derivation, { how: 'number' }>): string {
  const fixed = Math.abs(n).toFixed(d.decimals);
  const [int, frac] = fixed.split('.') as [string, string | undefined];
  const grouped = d.group === '' ? int : int.replace(/\B(?=(\d{3})+(?!\d))/g, d.group);
  return `${d.before}${n < 0 ? '-' : ''}${grouped}${frac !== undefined ? d.point + frac : ''}${d.after}`;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DATE_FORMATS = ['DD/MM/YYYY', 'MM/DD/YYYY', 'D/M/YYYY', 'M/D/YYYY', 'DD.MM.YYYY', 'D.M.YYYY', 'DD-MM-YYYY', 'MM-DD-YYYY', 'YYYY/MM/DD', 'DD/MM/YY', 'MM/DD/YY', 'D MMMM YYYY', 'MMMM D, YYYY', 'MMM D, YYYY', 'D MMM YYYY', 'YYYY-MM-DD'];

/** The date formats a literal could be in: those whose tokens are in its shape. */
function dateFormats(literal: string): Derivation[] {
  return /\d/.test(literal) && literal.length <= 40 ? DATE_FORMATS.map((format) => ({ how: 'date' as const, format })) : [];
}

/** An ISO date (YYYY-MM-DD) in a format; undefined for a value that is no such date. */
function formatDate(value: string, format: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim());
  if (!m) return undefined;
  const [y, mo, d] = [m[1]!, Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return undefined;
  const tokens: Record<string, string> = {
    YYYY: y,
    YY: y.slice(2),
    MMMM: MONTHS[mo - 1]!,
    MMM: MONTHS[mo - 1]!.slice(0, 3),
    MM: String(mo).padStart(2, '0'),
    M: String(mo),
    DD: String(d).padStart(2, '0'),
    D: String(d),
  };
  return format.replace(/YYYY|YY|MMMM|MMM|MM|M|DD|D/g, (t) => tokens[t]!);
}
