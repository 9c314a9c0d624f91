/**
 * Input values by reference (docs/run-cache.md#inputs-by-reference): the model is shown every
 * input value with its name, `{{path}}`, and enters a value by writing its name — in the text of
 * `type`, in the value of `form_input` — and the worker puts the value in when it types or sets
 * the field, exactly as it reveals a secret (docs/secrets.md#placeholders). A value entered that
 * way is known to be the input's: the run cache replays it with the next input's value there
 * (run-cache/values.ts), where a value the model copied could be a coincidence.
 *
 * Names are key paths (key-path.ts) in their text form, so any key round-trips and no key reaches
 * a prototype: `{{customer.name}}`, `{{lines.0.sku}}`, `{{totals["U.S. total"]}}`. A name that
 * names no value of the input (or names an object, an array or null) is typed as it is written.
 * Substitution is one pass over what the model wrote: a value put in is never read again for
 * names, so an input value that contains `{{…}}` is entered as it is.
 */
import { formatPath, leavesOf, parsePath, valueAt, type KeyPath } from '../contract/key-path.js';
import type { SecretVault } from './secrets.js';

/** What substitution needs of the run's secrets: the input as the model sees it, the secrets' names, and how a secret is revealed. */
export type InputSource = Pick<SecretVault, 'maskedPayload' | 'paths' | 'reveal'>;

/** A `{{path}}` in a text: where it is (`start` to `end`, braces included) and the path it names. */
export interface Placeholder {
  start: number;
  end: number;
  path: KeyPath;
}

/** Longest text between `{{` and `}}` read as a name: a longer one is text, not a name (keeps a scan linear in practice). */
const NAME_MAX_CHARS = 1_000;

/** The name of the value at `path`, as the model writes it. */
export function placeholderOf(path: KeyPath): string {
  return `{{${formatPath(path)}}}`;
}

/** Every `{{path}}` in a text, left to right, none overlapping; braces around anything else are text. */
export function placeholdersIn(text: string): Placeholder[] {
  const out: Placeholder[] = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf('{{', from);
    if (open < 0) return out;
    const close = closingBraces(text, open + 2);
    const path = close >= 0 ? parsePath(text.slice(open + 2, close)) : undefined;
    if (path && path.length > 0) {
      out.push({ start: open, end: close + 2, path });
      from = close + 2;
    } else from = open + 1;
  }
}

/** Index of the `}}` that ends a name begun at `from` (a `}}` inside a quoted key does not), or -1. */
function closingBraces(text: string, from: number): number {
  let quoted = false;
  const end = Math.min(text.length, from + NAME_MAX_CHARS + 2);
  for (let i = from; i < end; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '\\') i++;
      else if (ch === '"') quoted = false;
    } else if (ch === '"') quoted = true;
    else if (ch === '}' && text[i + 1] === '}') return i;
    else if (ch === '\n') return -1;
  }
  return -1;
}

/** What a name stands for in the input: a value to enter, and whether it is a secret's. */
interface Resolved {
  value: string | number | boolean;
  secret: boolean;
}

/**
 * The paths of the input's secrets. The vault names a secret by its own spelling of the path and
 * masks its value as `{{that spelling}}`; a leaf is a secret when its masked value is that
 * placeholder and the spelling is its path's (the key-path form, or the vault's dotted one).
 */
export function secretPathsOf(source: Pick<InputSource, 'maskedPayload' | 'paths'>): KeyPath[] {
  const spellings = new Set(source.paths);
  if (spellings.size === 0) return [];
  return leavesOf(source.maskedPayload)
    .filter(({ path, value }) => {
      if (typeof value !== 'string') return false;
      // The vault's dotted spelling is compared, never parsed: a dotted key stays one key.
      const spelled = [formatPath(path), path.join('.')].find((s) => spellings.has(s));
      return spelled !== undefined && value === `{{${spelled}}}`;
    })
    .map(({ path }) => path);
}

function resolver(source: InputSource): (path: KeyPath) => Resolved | undefined {
  const secrets = new Set(secretPathsOf(source).map((p) => JSON.stringify(p)));
  return (path) => {
    const value = valueAt(source.maskedPayload, path);
    if (typeof value === 'string' && secrets.has(JSON.stringify(path))) return { value: source.reveal(value), secret: true };
    if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return { value, secret: false };
    return undefined;
  };
}

/** Text the model wrote with each name of an input value replaced by the value (a secret revealed); whether a secret went in. */
export function enterText(source: InputSource, text: string): { text: string; secret: boolean } {
  const resolve = resolver(source);
  let out = '';
  let last = 0;
  let secret = false;
  for (const ph of placeholdersIn(text)) {
    const found = resolve(ph.path);
    if (!found) continue;
    out += text.slice(last, ph.start) + String(found.value);
    last = ph.end;
    secret ||= found.secret;
  }
  return { text: out + text.slice(last), secret };
}

/**
 * A `form_input` value the model wrote: a text that is one name and nothing else gives the value
 * of its type (`{{billable}}` → `true`, `{{amount}}` → `7`); any other text is entered as text.
 */
export function enterValue(source: InputSource, value: string | number | boolean): { value: string | number | boolean; secret: boolean } {
  if (typeof value !== 'string') return { value, secret: false };
  const [only, ...more] = placeholdersIn(value);
  if (only && more.length === 0 && value.slice(0, only.start).trim() === '' && value.slice(only.end).trim() === '') {
    const found = resolver(source)(only.path);
    if (found) return found;
  }
  const entered = enterText(source, value);
  return { value: entered.text, secret: entered.secret };
}
