import { describe, expect, it } from 'vitest';
import { KNOWN_MEMBERS, READ_MEMBERS, TAB_SWITCHING_MEMBERS } from '../../src/toolset/browser-members.js';

/** The sets the browser toolset works with all come from its one member table. */

describe('browser toolset members', () => {
  it('derives the reading and tab-switching members from the table, each a known member', () => {
    expect(KNOWN_MEMBERS.size).toBe(31);
    for (const name of [...READ_MEMBERS, ...TAB_SWITCHING_MEMBERS]) expect(KNOWN_MEMBERS.has(name)).toBe(true);
    expect([...READ_MEMBERS].sort()).toEqual(['find', 'get_page_text', 'list_tabs', 'read_console', 'read_network', 'read_page', 'screenshot', 'zoom']);
    // Acting members switch to the tab they name; tab management and page reads beside the view do not.
    expect(TAB_SWITCHING_MEMBERS.has('left_click')).toBe(true);
    expect(TAB_SWITCHING_MEMBERS.has('screenshot')).toBe(true);
    expect(TAB_SWITCHING_MEMBERS.has('switch_tab')).toBe(false);
    expect(TAB_SWITCHING_MEMBERS.has('read_page')).toBe(false);
    expect(KNOWN_MEMBERS.has('open_everything')).toBe(false);
  });
});
