/**
 * xdotool key syntax (what Claude's computer tool sends: `ctrl+shift+t`, `Return`, `KP_0`,
 * `ctrl+a Delete`) → DOM key names for the browser port (`Control`, `Enter`, `0`).
 *
 * Names are matched case-insensitively; a single character stands for itself (case kept, so
 * `A` types a capital). An unknown name is an error, never silently dropped: a dropped key
 * would let the model believe something happened that did not.
 */

export type ParseResult = { ok: true; keys: string[] } | { ok: false; reason: string };

const MODIFIERS = new Set(['Control', 'Shift', 'Alt', 'Meta']);

/** Lower-cased xdotool keysym (or common alias) → DOM key name(s), implied modifiers first. */
const NAMED: Readonly<Record<string, readonly string[]>> = (() => {
  const table: Record<string, readonly string[]> = {};
  const add = (keys: string | readonly string[], ...names: string[]) => {
    for (const name of names) table[name] = typeof keys === 'string' ? [keys] : keys;
  };
  // Modifiers. `super`/`cmd`/`win` all mean the OS key, which the browser calls Meta.
  add('Control', 'ctrl', 'control', 'control_l', 'control_r', 'ctrl_l', 'ctrl_r');
  add('Shift', 'shift', 'shift_l', 'shift_r');
  add('Alt', 'alt', 'alt_l', 'alt_r', 'option', 'opt', 'mod1');
  add('Meta', 'super', 'super_l', 'super_r', 'meta', 'meta_l', 'meta_r', 'cmd', 'command', 'win', 'windows', 'hyper_l', 'hyper_r');
  add('AltGraph', 'iso_level3_shift', 'altgr');
  // Editing and whitespace.
  add('Enter', 'return', 'enter', 'kp_enter', 'linefeed');
  add('Backspace', 'backspace');
  add('Delete', 'delete', 'del', 'kp_delete');
  add('Insert', 'insert', 'ins', 'kp_insert');
  add('Tab', 'tab', 'kp_tab');
  // ISO_Left_Tab is what X sends for Shift+Tab.
  add(['Shift', 'Tab'], 'iso_left_tab');
  add('Escape', 'escape', 'esc');
  add(' ', 'space', 'kp_space');
  // Navigation (the keypad names are what X reports with NumLock off).
  add('ArrowUp', 'up', 'kp_up', 'arrowup');
  add('ArrowDown', 'down', 'kp_down', 'arrowdown');
  add('ArrowLeft', 'left', 'kp_left', 'arrowleft');
  add('ArrowRight', 'right', 'kp_right', 'arrowright');
  add('Home', 'home', 'kp_home');
  add('End', 'end', 'kp_end');
  add('PageUp', 'page_up', 'prior', 'kp_page_up', 'kp_prior', 'pageup');
  add('PageDown', 'page_down', 'next', 'kp_page_down', 'kp_next', 'pagedown');
  // Locks and system keys.
  add('CapsLock', 'caps_lock', 'capslock');
  add('NumLock', 'num_lock', 'numlock');
  add('ScrollLock', 'scroll_lock', 'scrolllock');
  add('PrintScreen', 'print', 'printscreen', 'sys_req');
  add('Pause', 'pause', 'break');
  add('ContextMenu', 'menu', 'contextmenu');
  // Keypad operators and digits: the DOM key is the character they produce.
  add('+', 'kp_add');
  add('-', 'kp_subtract');
  add('*', 'kp_multiply');
  add('/', 'kp_divide');
  add('.', 'kp_decimal');
  add(',', 'kp_separator');
  add('=', 'kp_equal');
  for (let d = 0; d <= 9; d++) add(String(d), `kp_${d}`);
  for (let f = 1; f <= 24; f++) add(`F${f}`, `f${f}`);
  // Punctuation keysyms (xdotool cannot put `+` or a space inside a chord, so it names them).
  const punctuation: Record<string, string> = {
    minus: '-', plus: '+', equal: '=', comma: ',', period: '.', slash: '/', backslash: '\\',
    semicolon: ';', colon: ':', apostrophe: "'", quoteright: "'", quotedbl: '"', grave: '`',
    quoteleft: '`', bracketleft: '[', bracketright: ']', braceleft: '{', braceright: '}',
    parenleft: '(', parenright: ')', less: '<', greater: '>', question: '?', exclam: '!',
    at: '@', numbersign: '#', dollar: '$', percent: '%', asciicircum: '^', ampersand: '&',
    asterisk: '*', underscore: '_', bar: '|', asciitilde: '~',
  };
  for (const [name, char] of Object.entries(punctuation)) add(char, name);
  return table;
})();

/**
 * The DOM key(s) one xdotool name stands for (implied modifiers first), or undefined when the
 * name is unknown. `ISO_Left_Tab` is the only name that stands for two keys (Shift, Tab).
 */
export function parseKeyName(name: string): readonly string[] | undefined {
  if (name.length === 0) return undefined;
  // A single character (by code point, so an emoji counts as one) is itself.
  if ([...name].length === 1) return [name];
  return NAMED[name.toLowerCase()];
}

/**
 * One chord (`ctrl+shift+t`): the keys to press in order — modifiers first, the key last — and
 * to release in reverse. Separators may be `+` with optional spaces around them.
 */
export function parseChord(text: string): ParseResult {
  const chord = text.trim();
  if (chord.length === 0) return { ok: false, reason: 'empty key combination' };
  const names = splitChord(chord);
  if (!names) return { ok: false, reason: `"${text}" is not a key combination (empty name between "+")` };
  const modifiers: string[] = [];
  const others: string[] = [];
  for (const name of names) {
    const keys = parseKeyName(name);
    if (!keys) return { ok: false, reason: `unknown key name "${name}" in "${text}"` };
    for (const key of keys) {
      const bucket = MODIFIERS.has(key) ? modifiers : others;
      if (!bucket.includes(key)) bucket.push(key);
    }
  }
  return { ok: true, keys: [...modifiers, ...others] };
}

/** Space-separated chords (`ctrl+a Delete`), pressed one after another. */
export function parseKeySequence(text: string): { ok: true; chords: string[][] } | { ok: false; reason: string } {
  // Spaces around "+" belong to the chord, not between chords.
  const normalised = text.trim().replace(/\s*\+\s*/g, '+');
  if (normalised.length === 0) return { ok: false, reason: 'no key given' };
  // A chord that is (or ends in) a literal "+" must not be split away from its modifiers.
  const chords: string[][] = [];
  for (const token of normalised.split(/\s+/)) {
    const parsed = parseChord(token);
    if (!parsed.ok) return parsed;
    chords.push(parsed.keys);
  }
  return { ok: true, chords };
}

/** True when the key is a modifier (held while other keys or clicks happen). */
export function isModifierKey(key: string): boolean {
  return MODIFIERS.has(key);
}

function splitChord(chord: string): string[] | undefined {
  if (chord === '+') return ['+'];
  // `ctrl++` means ctrl and the plus key.
  const trailingPlus = chord.length > 1 && chord.endsWith('++');
  const body = trailingPlus ? chord.slice(0, -2) : chord;
  const names = body.split('+');
  if (names.some((n) => n.length === 0)) return undefined;
  return trailingPlus ? [...names, '+'] : names;
}
