import { describe, expect, it } from 'vitest';
import { toolVersionFor } from '../../src/model/tool-versions.js';

const NEWEST = { version: 'computer_20251124', beta: 'computer-use-2025-11-24', supportsZoom: true };
const PREVIOUS = { version: 'computer_20250124', beta: 'computer-use-2025-01-24', supportsZoom: false };

describe('toolVersionFor', () => {
  it.each([
    'claude-opus-4-5',
    'claude-opus-4-5-20251101',
    'claude-opus-4-6',
    'claude-sonnet-4-6',
    'claude-opus-4-7',
  ])('gives the documented newest tool to %s', (model) => {
    expect(toolVersionFor(model)).toEqual(NEWEST);
  });

  it.each([
    'claude-sonnet-4-5',
    'claude-sonnet-4-5-20250929',
    'claude-haiku-4-5',
    'claude-haiku-4-5-20251001',
    'claude-opus-4-1',
    'claude-opus-4-1-20250805',
    'claude-opus-4-20250514',
    'claude-sonnet-4-20250514',
    'claude-sonnet-4-0',
    'claude-opus-4-0',
    'claude-3-7-sonnet-20250219',
    'claude-3-7-sonnet-latest',
  ])('gives the previous tool to %s', (model) => {
    expect(toolVersionFor(model)).toEqual(PREVIOUS);
  });

  it.each(['claude-opus-4-8', 'claude-sonnet-5-5', 'claude-opus-5', 'claude-haiku-5-5', 'claude-mythos-5-2', 'claude-fable-5-1', 'claude-next-9'])(
    'defaults newer or unknown model %s to the newest tool',
    (model) => {
      expect(toolVersionFor(model)).toEqual(NEWEST);
    },
  );

  it('ignores case and surrounding spaces', () => {
    expect(toolVersionFor('  Claude-Sonnet-4-5 ')).toEqual(PREVIOUS);
  });

  it('does not let a family prefix swallow a different family', () => {
    // `claude-opus-4-5` must not match `claude-opus-4` rows, nor `claude-sonnet-4-50` match 4-5.
    expect(toolVersionFor('claude-opus-4-5').version).toBe('computer_20251124');
    expect(toolVersionFor('claude-sonnet-4-50').version).toBe('computer_20251124');
  });

  it('returns a fresh object each call', () => {
    const a = toolVersionFor('claude-opus-4-5');
    a.supportsZoom = false;
    expect(toolVersionFor('claude-opus-4-5').supportsZoom).toBe(true);
  });
});
