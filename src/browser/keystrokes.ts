/**
 * Typing as CDP key events, sent in one go. Playwright's `keyboard.type` waits for each key's
 * round trip to the renderer before sending the next (two per character); on a busy machine
 * that is most of a step's time (an 8-character `type` took half a second at 8 concurrent
 * executions on 2 cores). CDP handles one session's commands in order, so the events of a
 * whole string can be sent at once and awaited together: the page sees the same keydown,
 * keypress, input and keyup events, in the same order, as with one key at a time.
 *
 * Characters on a US keyboard are typed as keys (the layout xdotool's `type` uses too);
 * anything else (accents, CJK, emoji) is inserted as text, as Playwright does.
 */

export type KeystrokeCommand =
  | {
      method: 'Input.dispatchKeyEvent';
      params: { type: 'keyDown' | 'rawKeyDown' | 'keyUp'; key: string; code: string; windowsVirtualKeyCode: number; text?: string; unmodifiedText?: string };
    }
  | { method: 'Input.insertText'; params: { text: string } };

interface KeyDefinition {
  key: string;
  code: string;
  keyCode: number;
  /** What the key types; none for keys that only act (Tab). */
  text?: string;
}

/** code, keyCode, unshifted and shifted character of the US layout's punctuation keys. */
const PUNCTUATION: ReadonlyArray<readonly [string, number, string, string]> = [
  ['Minus', 189, '-', '_'],
  ['Equal', 187, '=', '+'],
  ['BracketLeft', 219, '[', '{'],
  ['BracketRight', 221, ']', '}'],
  ['Backslash', 220, '\\', '|'],
  ['Semicolon', 186, ';', ':'],
  ['Quote', 222, "'", '"'],
  ['Comma', 188, ',', '<'],
  ['Period', 190, '.', '>'],
  ['Slash', 191, '/', '?'],
  ['Backquote', 192, '`', '~'],
];
const SHIFTED_DIGITS = ')!@#$%^&*(';

const US_LAYOUT: ReadonlyMap<string, KeyDefinition> = (() => {
  const keys = new Map<string, KeyDefinition>();
  const add = (char: string, code: string, keyCode: number, text: string | undefined = char) => keys.set(char, { key: char, code, keyCode, ...(text === undefined ? {} : { text }) });
  for (let i = 0; i < 26; i++) {
    const upper = String.fromCharCode(65 + i);
    add(upper.toLowerCase(), `Key${upper}`, 65 + i);
    add(upper, `Key${upper}`, 65 + i);
  }
  for (let d = 0; d < 10; d++) {
    add(String(d), `Digit${d}`, 48 + d);
    add(SHIFTED_DIGITS[d]!, `Digit${d}`, 48 + d);
  }
  for (const [code, keyCode, plain, shifted] of PUNCTUATION) {
    add(plain, code, keyCode);
    add(shifted, code, keyCode);
  }
  add(' ', 'Space', 32);
  keys.set('\n', { key: 'Enter', code: 'Enter', keyCode: 13, text: '\r' });
  keys.set('\r', { key: 'Enter', code: 'Enter', keyCode: 13, text: '\r' });
  keys.set('\t', { key: 'Tab', code: 'Tab', keyCode: 9 });
  return keys;
})();

/** The CDP commands that type `text`, in order. A CRLF pair is one Enter. */
export function keystrokesFor(text: string): KeystrokeCommand[] {
  const commands: KeystrokeCommand[] = [];
  const chars = [...text.replace(/\r\n/g, '\n')];
  for (const char of chars) {
    const def = US_LAYOUT.get(char);
    if (!def) {
      commands.push({ method: 'Input.insertText', params: { text: char } });
      continue;
    }
    const base = { key: def.key, code: def.code, windowsVirtualKeyCode: def.keyCode };
    commands.push({
      method: 'Input.dispatchKeyEvent',
      params: def.text === undefined ? { type: 'rawKeyDown', ...base } : { type: 'keyDown', ...base, text: def.text, unmodifiedText: def.text },
    });
    commands.push({ method: 'Input.dispatchKeyEvent', params: { type: 'keyUp', ...base } });
  }
  return commands;
}

/** Commands in flight at once, at most: a long text goes in batches. */
export const KEYSTROKE_BATCH = 200;
