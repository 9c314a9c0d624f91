/**
 * A secret spread one character per field across adjacent fields (docs/secrets.md#forms): a
 * code widget of one box per digit, read as `textbox [ref_4] value="7"`, `… value="3"`, … Read
 * one by one, no box holds the secret; read as a run, they do.
 *
 * A read of the page (read_page, find, a hand-over's view) writes a field's value as
 * `value="…"` (JSON-style escapes for `"` and `\`), one field after another in document order.
 * A run is a sequence of fields, each holding one character, with no field of another length
 * between them; its characters joined are redacted as any text is, and when that finds a secret
 * the value of every field of the run becomes the secret's placeholder. One scan of the text,
 * one redaction per run: linear in the text.
 */

/** A written field value; each alternative starts on its own character, so the scan never backtracks into itself. */
const VALUE = /value="((?:[^"\\\n]|\\.)*)"/g;
/** What a redaction writes in a secret's place. */
const PLACEHOLDER = /\{\{[^}]*\}\}|\[REDACTED\]/;

interface Field {
  /** Where its value starts and ends (inside the quotes). */
  start: number;
  end: number;
  char: string;
}

/** Reads a written value back (its escapes undone); the value itself when it is not one. */
function unescape(written: string): string {
  return written.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

export function redactFieldRuns(text: string, redact: (text: string) => string): string {
  if (!text.includes('value="')) return text;
  const runs: Field[][] = [];
  let run: Field[] = [];
  const close = () => {
    if (run.length >= 2) runs.push(run);
    run = [];
  };
  VALUE.lastIndex = 0;
  for (let m = VALUE.exec(text); m; m = VALUE.exec(text)) {
    const value = unescape(m[1]!);
    if ([...value].length !== 1) {
      close();
      continue;
    }
    const start = m.index + 'value="'.length;
    run.push({ start, end: start + m[1]!.length, char: value });
  }
  close();
  if (runs.length === 0) return text;
  let out = '';
  let copied = 0;
  for (const fields of runs) {
    const joined = fields.map((f) => f.char).join('');
    const redacted = redact(joined);
    if (redacted === joined) continue;
    const shown = PLACEHOLDER.exec(redacted)?.[0] ?? '[REDACTED]';
    for (const field of fields) {
      out += text.slice(copied, field.start) + shown;
      copied = field.end;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}
