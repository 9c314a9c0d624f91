import { describe, expect, it } from 'vitest';
import { keystrokesFor } from '../../src/browser/keystrokes.js';

const summary = (text: string) =>
  keystrokesFor(text).map((c) => (c.method === 'Input.insertText' ? `insert:${c.params.text}` : `${c.params.type}:${c.params.key}:${c.params.code}:${c.params.windowsVirtualKeyCode}:${c.params.text ?? ''}`));

describe('keystrokes for typed text', () => {
  it('presses a US-layout key per character, shifted characters on their own key', () => {
    expect(summary('aZ?')).toEqual(['keyDown:a:KeyA:65:a', 'keyUp:a:KeyA:65:', 'keyDown:Z:KeyZ:90:Z', 'keyUp:Z:KeyZ:90:', 'keyDown:?:Slash:191:?', 'keyUp:?:Slash:191:']);
    expect(summary('(0')).toEqual(['keyDown:(:Digit9:57:(', 'keyUp:(:Digit9:57:', 'keyDown:0:Digit0:48:0', 'keyUp:0:Digit0:48:']);
  });

  it('types a line break as one Enter, and Tab as a key that types nothing', () => {
    expect(summary('a\r\nb')).toEqual(['keyDown:a:KeyA:65:a', 'keyUp:a:KeyA:65:', 'keyDown:Enter:Enter:13:\r', 'keyUp:Enter:Enter:13:', 'keyDown:b:KeyB:66:b', 'keyUp:b:KeyB:66:']);
    expect(summary('\t')).toEqual(['rawKeyDown:Tab:Tab:9:', 'keyUp:Tab:Tab:9:']);
  });

  it('inserts characters no key types, whole code points at a time', () => {
    expect(summary('é😀')).toEqual(['insert:é', 'insert:😀']);
  });

  it('types nothing for an empty text', () => {
    expect(keystrokesFor('')).toEqual([]);
  });
});
