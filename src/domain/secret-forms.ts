/**
 * The forms a secret value takes on its way out of a page or a transport, as one matcher per
 * secret (docs/secrets.md#forms): as typed, JSON/JS- or HTML-escaped (named and numeric
 * entities), percent- or form-encoded (also twice), upper- or lower-cased, with whitespace
 * collapsed or turned into `+`/`%20`/`&nbsp;`, grouped for display (a space, dash, dot or slash
 * between two of its characters: `4111 1111 1111 1111`, `DE89-3704-0044`), base64 (standard or
 * URL alphabet, at any byte offset inside a larger encoded text), and any leading piece of 8
 * characters or more of any of these.
 *
 * Written here because no library redacts a value in its encoded forms: a matcher is built per
 * character of the secret (each character matches any of its encodings), then a match of the
 * first characters is extended one character at a time as far as the text follows the secret.
 * Every step is a fixed alternation tried at one position, so a scan is linear in the text.
 */

/** A secret cut short is still the secret from this many leading characters on. */
export const MIN_LEADING_PIECE = 8;

export interface SecretForms {
  /** Replaces every form of the secret in `text` with `placeholder`. */
  replace(text: string, placeholder: string): string;
}

const NAMED_ENTITIES: Record<string, string[]> = {
  '"': ['quot'],
  '&': ['amp'],
  '<': ['lt'],
  '>': ['gt'],
  "'": ['apos'],
  '\u00a0': ['nbsp'],
};

/** Whitespace in its common encodings; a run of it matches a run of the secret's whitespace. */
const WHITESPACE_FORMS =
  '[\\s\\u00a0]|%(?:25)*(?:20|09|0a|0d|c2%(?:25)*a0)|&nbsp;?|&#0*(?:32|9|10|13|160);?|&#x0*(?:20|9|a|d|a0);?|\\\\+[ntrfv]|\\\\+u00(?:20|a0|09|0a|0d)|\\\\+x(?:20|a0|09|0a|0d)';

/**
 * What a page puts between two characters of a value to group it for display (a card number in
 * fours, an IBAN, a phone number, a date): a space, a dash, a dot or a slash, in any of their
 * encodings, up to three of them (`4111 - 1111`). Allowed before every character of the secret
 * but its first: every grouping, whatever the sizes of its groups, is then one of its forms.
 * Lazy: the secret's own next character is taken before a separator, so a secret's own `-` or
 * `/` is never read as a separator that leaves the unit after it nothing to match.
 * One bounded alternation at one position: no quantifier over a quantifier that can match the
 * same text two ways beyond three steps.
 */
// Also the invisible ones pages put where a long number may break (a soft hyphen, zero-width
// spaces and joiners, a word joiner), and an underscore or comma some templates group with.
const GROUP_SEPARATOR_CHARS = [' ', '-', '.', '/', '_', ',', '\u00a0', '\u00ad', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\u2022', '\u00b7'];
const GROUP_SEPARATOR_NAMES = ['sol', 'period', 'hyphen', 'dash', 'ndash', 'mdash', 'minus', 'bull', 'middot', 'nbsp', 'shy', 'lowbar', 'comma', 'zwsp', 'zwj', 'zwnj'];
let separatorSource: string | undefined;
function groupSeparator(): string {
  if (separatorSource !== undefined) return separatorSource;
  const alternatives = [WHITESPACE_FORMS, '\\+', `&(?:amp;)*(?:${GROUP_SEPARATOR_NAMES.join('|')});?`];
  for (const char of GROUP_SEPARATOR_CHARS) alternatives.push(...encodings(char), `\\\\*${escapeRegExp(char)}`);
  separatorSource = `(?:${alternatives.join('|')}){1,3}?`;
  return separatorSource;
}

/** The short escapes JSON and JavaScript write for control characters. */
const SHORT_ESCAPES: Record<string, string> = { '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v', '\0': '0' };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function hex(n: number, width = 0): string {
  return n.toString(16).padStart(width, '0');
}

/**
 * One character of the secret in any of its encodings (the regex carries the `i` flag, which
 * covers a case change of the character as it is, not of its encodings: `É` percent-encoded is
 * `%C3%89`, `é` is `%C3%A9`, so each case of the character is encoded too).
 */
function charUnit(char: string): string {
  const cases = [...new Set([char, char.toUpperCase(), char.toLowerCase()])].filter((c) => [...c].length === 1);
  const alternatives: string[] = [];
  // Longer encodings first: a unit is matched without backtracking into it (`&amp;` is not `&`).
  for (const name of NAMED_ENTITIES[char] ?? []) alternatives.push(`&(?:amp;)*${name};?`);
  for (const c of cases) alternatives.push(...encodings(c));
  if (SHORT_ESCAPES[char]) alternatives.push(`\\\\+${SHORT_ESCAPES[char]}`);
  // JSON/JS/CSS escaping puts backslashes before punctuation (`\"`, `\\`, `\/`), once or more.
  const literal = escapeRegExp(char);
  // A backslash, escaped or not, is a run of them; the run gives back its last ones when the
  // next character's own escape starts with them (`\\u0041`): see `replaceForm`.
  alternatives.push(/[A-Za-z0-9]/.test(char) ? literal : char === '\\' ? '\\\\+' : `\\\\*${literal}`);
  return `(?:${alternatives.join('|')})`;
}

/** A character's numeric entities, percent-encoded bytes and `\u`/`\x` escapes. */
function encodings(char: string): string[] {
  const code = char.codePointAt(0)!;
  const out = [`&#0*${code};?`, `&#x0*${hex(code)};?`];
  out.push([...Buffer.from(char, 'utf8')].map((b) => `%(?:25)*${hex(b, 2)}`).join(''));
  if (code <= 0xffff) out.push(`\\\\+u${hex(code, 4)}`);
  else {
    const high = 0xd800 + ((code - 0x10000) >> 10);
    const low = 0xdc00 + ((code - 0x10000) & 0x3ff);
    out.push(`\\\\+u${hex(high, 4)}\\\\+u${hex(low, 4)}`, `\\\\+u\\{0*${hex(code)}\\}`);
  }
  if (code < 0x100) out.push(`\\\\+x${hex(code, 2)}`);
  return out;
}

/** One unit of a secret: a character, or a run of whitespace, in any of their encodings. */
interface UnitSource {
  source: string;
  /**
   * For a run (of whitespace, or a backslash): how many characters of the secret it stands for.
   * A run's match may give back its last characters to the unit after it.
   */
  run?: number;
}

/** The secret as a list of units: characters, and whitespace runs as one unit each. */
function units(secret: string): UnitSource[] {
  const out: UnitSource[] = [];
  const separator = groupSeparator();
  const pieces = secret.trim().split(/(\s+)/u);
  for (const piece of pieces) {
    if (piece === '') continue;
    // Any whitespace, `+` (form encoding), and this run's own characters in any of their
    // encodings (U+2029 as %E2%80%A9). A `+` that is the secret's own next character is given
    // back (see `extend`).
    if (/^\s+$/u.test(piece)) out.push({ source: `(?:${WHITESPACE_FORMS}|\\+|${[...new Set(piece)].map(charUnit).join('|')})+`, run: [...piece].length });
    // A backslash is a run too: its forms are runs of backslashes (`\`, `\\`, `\\\\`).
    else {
      for (const char of piece) {
        // A character after another one (not after a whitespace run) may be preceded by a
        // display grouping's separator. A backslash stays a run of its own.
        const grouped = out.length > 0 && out[out.length - 1]!.run === undefined && char !== '\\';
        out.push({ source: grouped ? `(?:${separator})??${charUnit(char)}` : charUnit(char), ...(char === '\\' ? { run: 1 } : {}) });
      }
    }
  }
  return out;
}

/**
 * The base64 texts that stand for the secret's bytes wherever they sit in a longer encoded
 * value: for each of the 3 byte offsets, the characters that depend on the secret's bytes only.
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>();
  for (let offset = 0; offset < 3; offset += 1) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const first = offset === 0 ? 0 : offset + 1;
    const last = Math.floor(((offset + bytes.length) * 8) / 6);
    const stable = encoded.slice(first, last);
    // Shorter texts occur by chance in any encoded blob (images included).
    if (stable.length >= 8) forms.add(stable);
  }
  return [...forms];
}

interface Unit {
  /** Tried at the position the match has reached (sticky). */
  re: RegExp;
  run?: number;
  /** The unit as a whole text (a run's match, shortened, must still be one). */
  whole?: RegExp;
}

/** The most a run gives back to the units after it (`\\\\\\\\u`, escaped three times, starts with 7). */
const GIVE_BACK = 16;

interface Extender {
  /** Finds where a form may start: its first unit (a global regex). */
  head: RegExp;
  /** Every unit, the first included. */
  units: Unit[];
  /** How much of the secret a leading piece must show to count (see `weight`). */
  minWeight: number;
}

function extender(sources: UnitSource[], flags: string, minWeight: number): Extender {
  return {
    head: new RegExp(sources[0]!.source, `g${flags}`),
    units: sources.map(({ source, run }) => ({ re: new RegExp(source, `y${flags}`), ...(run !== undefined ? { run, whole: new RegExp(`^(?:${source})$`, flags) } : {}) })),
    minWeight,
  };
}

/**
 * How much of the secret a matched unit shows, for the cut-short rule: a leading piece counts
 * when it stands for 8 characters of the secret, or takes 8 characters of the text as shown.
 * A character counts its shown length (`a` 1, `\"` 2, `%22` 3, `&quot;` 6). A run counts the
 * secret's own length of it, also when a page collapsed it to one space (`ab  cd  e` shown as
 * `ab cd e` is 9), or its shown length where encoded (`%20%20`, `\n`, `\\`), but never more raw
 * whitespace than the secret has there: a word followed by a column of spaces is not the start
 * of a secret whose second character is a space.
 */
function weight(unit: Unit, matched: string): number {
  if (unit.run === undefined) return matched.length;
  const raw = matched.length - matched.replace(/\s/gu, '').length;
  return Math.max(unit.run, matched.length - raw + Math.min(raw, unit.run));
}

/** Base64 characters; `+` and `/` also match the URL alphabet's `-` and `_`. */
function base64Units(text: string): string[] {
  return [...text].map((c) => (c === '+' ? '[+-]' : c === '/' ? '[/_]' : c));
}

export function secretForms(secret: string): SecretForms {
  const textUnits = units(secret);
  const extenders: Extender[] = [];
  if (textUnits.length > 0) extenders.push(extender(textUnits, 'iu', MIN_LEADING_PIECE));
  // Base64 is case-sensitive; a leading piece must stand for 8 bytes (11 characters) or more.
  for (const form of base64Forms(secret)) extenders.push(extender(base64Units(form).map((source) => ({ source })), 'u', 11));
  return {
    replace(text, placeholder) {
      let out = text;
      for (const form of extenders) out = replaceForm(out, form, placeholder);
      return out;
    },
  };
}

/**
 * Each place where the form starts is extended one unit at a time as far as the text follows
 * the secret; the piece is replaced when it is the whole secret or shows enough of it.
 *
 * A run (of whitespace, of backslashes) takes all it can, and may have taken what the units
 * after it start with: the backslashes of the next character's escape, a `+` that is the
 * secret's own rather than a form-encoded space. When a unit does not match, the last run
 * before it gives back its last characters, one at a time, and the units after it are tried
 * again. That search is bounded per place (`BACKTRACK_STEPS`), and a piece that is not the
 * secret stops within `minWeight` units (each weighs 1 or more), so a scan is linear.
 */
function replaceForm(text: string, form: Extender, placeholder: string): string {
  form.head.lastIndex = 0;
  let result = '';
  let copied = 0;
  for (let match = form.head.exec(text); match; match = form.head.exec(text)) {
    const start = match.index;
    const piece = extend(text, start, form.units);
    if (piece.count === form.units.length || piece.shown >= form.minWeight) {
      result += text.slice(copied, start) + placeholder;
      copied = piece.end;
      form.head.lastIndex = Math.max(piece.end, start + 1);
    } else {
      form.head.lastIndex = start + 1;
    }
  }
  return copied === 0 && result === '' ? text : result + text.slice(copied);
}

/** Where `unit` ends when it matches at `at`, else -1. */
function matchAt(unit: Unit, text: string, at: number): number {
  unit.re.lastIndex = at;
  const found = unit.re.exec(text);
  return found && found[0].length > 0 ? unit.re.lastIndex : -1;
}

/** Shortenings of a run tried at one place of the text. */
const BACKTRACK_STEPS = 64;

/** How far the units follow the text from `start`: units matched, where they end, their weight. */
function extend(text: string, start: number, units: readonly Unit[]): { count: number; end: number; shown: number } {
  /** `ends[i]`: where unit i's match ends; unit i starts where unit i - 1 ended. */
  const ends: number[] = [];
  const from = (i: number) => (i === 0 ? start : ends[i - 1]!);
  /** The state that reached furthest into the text (at the same place, with more units). */
  let best: number[] = [];
  let bestEnd = start;
  const keep = (count: number) => {
    const end = count === 0 ? start : ends[count - 1]!;
    if (end > bestEnd || (end === bestEnd && count > best.length)) {
      best = ends.slice(0, count);
      bestEnd = end;
    }
  };
  let steps = 0;
  let i = 0;
  while (i < units.length) {
    const next = matchAt(units[i]!, text, from(i));
    if (next >= 0) {
      ends[i] = next;
      i += 1;
      continue;
    }
    if (i === 0) break;
    keep(i);
    // Shorten the last run shortly before unit i that can still be shortened, and go on after it.
    let resumed = false;
    for (let r = i - 1; r >= 0 && r >= i - GIVE_BACK && !resumed && steps < BACKTRACK_STEPS; r -= 1) {
      const run = units[r]!;
      if (!run.whole) continue;
      for (let back = ends[r]! - 1; back > from(r) && ends[r]! - back <= GIVE_BACK && steps < BACKTRACK_STEPS; back -= 1) {
        steps += 1;
        if (!run.whole.test(text.slice(from(r), back))) continue;
        ends[r] = back;
        i = r + 1;
        resumed = true;
        break;
      }
    }
    if (!resumed) break;
  }
  keep(i);
  if (best.length === units.length) return { count: best.length, end: bestEnd, shown: Infinity };
  let shown = 0;
  best.forEach((end, u) => {
    shown += weight(units[u]!, text.slice(u === 0 ? start : best[u - 1]!, end));
  });
  return { count: best.length, end: bestEnd, shown };
}
