/**
 * The forms a secret value takes on its way out of a page or a transport, as one matcher per
 * secret (docs/secrets.md#forms): as typed, JSON/JS- or HTML-escaped (named and numeric
 * entities), percent- or form-encoded (also twice), upper- or lower-cased, with whitespace
 * collapsed or turned into `+`/`%20`/`&nbsp;`, base64 (standard or URL alphabet, at any byte
 * offset inside a larger encoded text), and any leading piece of 8 characters or more of any of
 * these.
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

/** The short escapes JSON and JavaScript write for control characters. */
const SHORT_ESCAPES: Record<string, string> = { '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v', '\0': '0' };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function hex(n: number, width = 0): string {
  return n.toString(16).padStart(width, '0');
}

/** One character of the secret in any of its encodings (the regex carries the `i` flag). */
function charUnit(char: string): string {
  const code = char.codePointAt(0)!;
  const alternatives: string[] = [];
  // Longer encodings first: a unit is matched without backtracking into it (`&amp;` is not `&`).
  for (const name of NAMED_ENTITIES[char] ?? []) alternatives.push(`&(?:amp;)*${name};?`);
  alternatives.push(`&#0*${code};?`, `&#x0*${hex(code)};?`);
  const bytes = [...Buffer.from(char, 'utf8')];
  alternatives.push(bytes.map((b) => `%(?:25)*${hex(b, 2)}`).join(''));
  if (code <= 0xffff) alternatives.push(`\\\\+u${hex(code, 4)}`);
  else {
    const high = 0xd800 + ((code - 0x10000) >> 10);
    const low = 0xdc00 + ((code - 0x10000) & 0x3ff);
    alternatives.push(`\\\\+u${hex(high, 4)}\\\\+u${hex(low, 4)}`, `\\\\+u\\{0*${hex(code)}\\}`);
  }
  if (code < 0x100) alternatives.push(`\\\\+x${hex(code, 2)}`);
  if (SHORT_ESCAPES[char]) alternatives.push(`\\\\+${SHORT_ESCAPES[char]}`);
  // JSON/JS/CSS escaping puts backslashes before punctuation (`\"`, `\\`, `\/`), once or more.
  const literal = escapeRegExp(char);
  // A backslash escaped once or more is an even run; it is matched by pairs first, so that the
  // backslash that starts the next character's own escape (`\\u0041`) is left to it.
  alternatives.push(/[A-Za-z0-9]/.test(char) ? literal : char === '\\' ? '(?:\\\\\\\\)+|\\\\' : `\\\\*${literal}`);
  return `(?:${alternatives.join('|')})`;
}

/** The secret as a list of units: characters, and whitespace runs as one unit each. */
function units(secret: string): string[] {
  const out: string[] = [];
  const pieces = secret.trim().split(/(\s+)/u);
  pieces.forEach((piece, i) => {
    if (piece === '') return;
    // Any whitespace, and this run's own characters in any of their encodings (U+2029 as
    // %E2%80%A9); a `+` (form encoding) only when the secret's next character is not one.
    const plus = pieces[i + 1]?.startsWith('+') ? '' : '|\\+';
    if (/^\s+$/u.test(piece)) out.push(`(?:${WHITESPACE_FORMS}${plus}|${[...new Set(piece)].map(charUnit).join('|')})+`);
    else for (const char of piece) out.push(charUnit(char));
  });
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

interface Extender {
  /** Finds the first units of the form (a global regex). */
  head: RegExp;
  /** Each later unit, tried at the position the match has reached (sticky). */
  rest: RegExp[];
}

function extender(unitSources: string[], flags: string): Extender {
  const headCount = Math.min(MIN_LEADING_PIECE, unitSources.length);
  return {
    head: new RegExp(unitSources.slice(0, headCount).join(''), `g${flags}`),
    rest: unitSources.slice(headCount).map((source) => new RegExp(source, `y${flags}`)),
  };
}

/** Base64 characters; `+` and `/` also match the URL alphabet's `-` and `_`. */
function base64Units(text: string): string[] {
  return [...text].map((c) => (c === '+' ? '[+-]' : c === '/' ? '[/_]' : c));
}

export function secretForms(secret: string): SecretForms {
  const textUnits = units(secret);
  const extenders: Extender[] = [];
  if (textUnits.length > 0) extenders.push(extender(textUnits, 'iu'));
  // Base64 is case-sensitive; a leading piece must stand for 8 bytes (11 characters) or more.
  for (const form of base64Forms(secret)) {
    const all = base64Units(form);
    const headCount = Math.min(all.length, 11);
    extenders.push({ head: new RegExp(all.slice(0, headCount).join(''), 'gu'), rest: all.slice(headCount).map((s) => new RegExp(s, 'yu')) });
  }
  return {
    replace(text, placeholder) {
      let out = text;
      for (const form of extenders) out = replaceForm(out, form, placeholder);
      return out;
    },
  };
}

function replaceForm(text: string, form: Extender, placeholder: string): string {
  form.head.lastIndex = 0;
  let result = '';
  let copied = 0;
  for (let match = form.head.exec(text); match; match = form.head.exec(text)) {
    if (match[0].length === 0) {
      form.head.lastIndex += 1;
      continue;
    }
    let end = match.index + match[0].length;
    for (const unit of form.rest) {
      unit.lastIndex = end;
      const next = unit.exec(text);
      if (!next || next[0].length === 0) break;
      end = unit.lastIndex;
    }
    result += text.slice(copied, match.index) + placeholder;
    copied = end;
    form.head.lastIndex = end;
  }
  return copied === 0 && result === '' ? text : result + text.slice(copied);
}
