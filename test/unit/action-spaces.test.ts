import { describe, expect, it } from 'vitest';
import { ACTION_SPACE_KINDS, computerTool, isToolsetType, TOOL_TYPES, ZOOM_COMPUTER_TOOL_TYPES } from '../../src/domain/action-spaces.js';
import { parseSpecification } from '../../src/domain/specification.js';

/** The one table of the action spaces' tools, and what derives from it. */
describe('the action-space table', () => {
  it('gives each computer tool version its beta flag and zoom', () => {
    expect(computerTool('computer_toolset_20260801')).toEqual({ type: 'computer_toolset_20260801', zoom: true });
    expect(computerTool('computer_20251124')).toEqual({ type: 'computer_20251124', beta: 'computer-use-2025-11-24', zoom: true });
    expect(computerTool('computer_20250124')).toEqual({ type: 'computer_20250124', beta: 'computer-use-2025-01-24', zoom: false });
  });

  it('knows which tools are declared as client toolsets and which versions zoom', () => {
    expect(Object.keys(TOOL_TYPES).filter(isToolsetType)).toEqual(['browser_toolset_20260801', 'computer_toolset_20260801']);
    expect(isToolsetType('computer_20251124')).toBe(false);
    expect(isToolsetType('toString')).toBe(false);
    expect(ZOOM_COMPUTER_TOOL_TYPES).toEqual(['computer_toolset_20260801', 'computer_20251124']);
  });

  it('is where the specification’s toolset values come from', () => {
    expect(ACTION_SPACE_KINDS).toEqual(['browser', 'computer']);
    expect(new Set(Object.values(TOOL_TYPES).map((row) => row.kind))).toEqual(new Set(ACTION_SPACE_KINDS));
    const refused = () => parseSpecification({ prompt: 'p', allowedDomains: ['shop.test'], toolset: 'desktop' });
    expect(refused).toThrow('must be "browser" or "computer"');
  });
});
