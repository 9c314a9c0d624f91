import { describe, expect, it } from 'vitest';
import { isModifierKey, parseChord, parseKeyName, parseKeySequence } from '../../src/toolset/xdotool-keys.js';

describe('parseKeyName', () => {
  it.each([
    ['Return', 'Enter'],
    ['KP_Enter', 'Enter'],
    ['BackSpace', 'Backspace'],
    ['Page_Down', 'PageDown'],
    ['Page_Up', 'PageUp'],
    ['Prior', 'PageUp'],
    ['Next', 'PageDown'],
    ['Escape', 'Escape'],
    ['Esc', 'Escape'],
    ['space', ' '],
    ['minus', '-'],
    ['plus', '+'],
    ['KP_0', '0'],
    ['KP_9', '9'],
    ['F1', 'F1'],
    ['F12', 'F12'],
    ['Up', 'ArrowUp'],
    ['Down', 'ArrowDown'],
    ['Left', 'ArrowLeft'],
    ['Right', 'ArrowRight'],
    ['KP_Left', 'ArrowLeft'],
    ['Home', 'Home'],
    ['End', 'End'],
    ['Delete', 'Delete'],
    ['Tab', 'Tab'],
    ['ctrl', 'Control'],
    ['Control_L', 'Control'],
    ['Shift_R', 'Shift'],
    ['alt', 'Alt'],
    ['super', 'Meta'],
    ['Super_L', 'Meta'],
    ['cmd', 'Meta'],
    ['meta', 'Meta'],
  ])('%s → %s', (name, key) => {
    expect(parseKeyName(name)).toEqual([key]);
  });

  it('matches names case-insensitively', () => {
    expect(parseKeyName('RETURN')).toEqual(['Enter']);
    expect(parseKeyName('backspace')).toEqual(['Backspace']);
    expect(parseKeyName('page_down')).toEqual(['PageDown']);
    expect(parseKeyName('CTRL')).toEqual(['Control']);
  });

  it('keeps single characters as they are, case included', () => {
    expect(parseKeyName('a')).toEqual(['a']);
    expect(parseKeyName('A')).toEqual(['A']);
    expect(parseKeyName('7')).toEqual(['7']);
    expect(parseKeyName('/')).toEqual(['/']);
    expect(parseKeyName('é')).toEqual(['é']);
  });

  it('maps ISO_Left_Tab to Shift+Tab', () => {
    expect(parseKeyName('ISO_Left_Tab')).toEqual(['Shift', 'Tab']);
  });

  it('returns undefined for unknown names', () => {
    expect(parseKeyName('Foo_Bar')).toBeUndefined();
    expect(parseKeyName('')).toBeUndefined();
    expect(parseKeyName('F25')).toBeUndefined();
  });
});

describe('parseChord', () => {
  it('puts modifiers first and the key last', () => {
    expect(parseChord('ctrl+shift+t')).toEqual({ ok: true, keys: ['Control', 'Shift', 't'] });
    expect(parseChord('alt+F4')).toEqual({ ok: true, keys: ['Alt', 'F4'] });
    expect(parseChord('a+ctrl')).toEqual({ ok: true, keys: ['Control', 'a'] });
    expect(parseChord('super+Left')).toEqual({ ok: true, keys: ['Meta', 'ArrowLeft'] });
  });

  it('accepts a lone key or a lone modifier', () => {
    expect(parseChord('Return')).toEqual({ ok: true, keys: ['Enter'] });
    expect(parseChord('shift')).toEqual({ ok: true, keys: ['Shift'] });
  });

  it('handles the plus key and the shift implied by ISO_Left_Tab', () => {
    expect(parseChord('ctrl+plus')).toEqual({ ok: true, keys: ['Control', '+'] });
    expect(parseChord('ctrl++')).toEqual({ ok: true, keys: ['Control', '+'] });
    expect(parseChord('+')).toEqual({ ok: true, keys: ['+'] });
    expect(parseChord('ISO_Left_Tab')).toEqual({ ok: true, keys: ['Shift', 'Tab'] });
    expect(parseChord('shift+ISO_Left_Tab')).toEqual({ ok: true, keys: ['Shift', 'Tab'] });
  });

  it('rejects unknown names and empty parts, naming the culprit', () => {
    const unknown = parseChord('ctrl+Frobnicate');
    expect(unknown.ok).toBe(false);
    if (!unknown.ok) expect(unknown.reason).toContain('Frobnicate');
    expect(parseChord('ctrl+').ok).toBe(false);
    expect(parseChord('').ok).toBe(false);
    expect(parseChord('ctrl++shift').ok).toBe(false);
  });
});

describe('parseKeySequence', () => {
  it('splits chords on spaces, in order', () => {
    expect(parseKeySequence('ctrl+a Delete')).toEqual({ ok: true, chords: [['Control', 'a'], ['Delete']] });
    expect(parseKeySequence('  Tab  Tab Return ')).toEqual({ ok: true, chords: [['Tab'], ['Tab'], ['Enter']] });
  });

  it('keeps spaces around "+" inside the chord', () => {
    expect(parseKeySequence('ctrl + shift + t')).toEqual({ ok: true, chords: [['Control', 'Shift', 't']] });
  });

  it('fails as a whole when one chord is unknown', () => {
    const result = parseKeySequence('ctrl+a Nope');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain('Nope');
    expect(parseKeySequence('   ').ok).toBe(false);
  });
});

describe('isModifierKey', () => {
  it('knows the four modifiers', () => {
    expect(['Control', 'Shift', 'Alt', 'Meta'].every(isModifierKey)).toBe(true);
    expect(isModifierKey('a')).toBe(false);
    expect(isModifierKey('Enter')).toBe(false);
  });
});
