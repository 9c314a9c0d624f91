/**
 * What the browser toolset reads and finds on a block editor (docs/run-cache.md#read-back-by-identity),
 * on real Chromium against the ProseMirror post editor of the real-app tests
 * (test/support/real-apps/block-editor.ts): contenteditable regions and blocks are listed with a
 * reference and their text as their value, a caret holder alone (U+FEFF) is an empty value, `find`
 * ranks a fly-out submenu item parked off the page (`top: -1000em`) after every element that can be
 * brought into view, and a field named by its placeholder ("Add title") comes first for a
 * description of it.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { ToolResultBlock } from '../../src/model/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionReport, ActionSpace } from '../../src/toolset/types.js';
import { startBlockEditor, type BlockEditor } from '../support/real-apps/block-editor.js';
import { neverAborted } from '../support/env.js';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const EMPTY = 'Empty block; start writing or type forward slash to choose a block';

let editor: BlockEditor;
let sandbox: BrowserSandbox;

beforeAll(async () => {
  editor = await startBlockEditor();
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: editor.hostRules });
}, 120_000);

afterAll(async () => {
  await sandbox?.close();
  await editor?.stop();
});

interface Harness {
  session: BrowserSession;
  space: ActionSpace;
  call(name: string, input?: Record<string, unknown>): Promise<ActionReport>;
  evaluate(expression: string): Promise<string>;
}

const text = (result: ToolResultBlock) => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
/** The line a read gives the element of `role "name"`. */
const lineOf = (read: string, role: string, name: string) => read.split('\n').find((l) => l.trim().startsWith(`${role} "${name}"`));
const refOf = (line: string | undefined) => /\[(ref_\d+)\]/.exec(line ?? '')?.[1];

let h: Harness;

beforeEach(async () => {
  const signal = new AbortController().signal;
  const session = await sandbox.openSession({ executionId: 'editor-reads', viewport: { width: 1280, height: 800 }, allowedDomains: [editor.host], onBlocked: () => {} }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault({}, undefined), allowJavascript: false },
  );
  const opened = await session.navigate(`${editor.origin}/wp-admin/post-new.php`, signal);
  if (!opened.ok) throw new Error(opened.error);
  let n = 0;
  h = {
    session,
    space,
    call: (name, input = {}) => space.run({ type: 'tool_use', id: `toolu_${++n}`, name, input, toolset_name: 'browser' }, { signal }),
    evaluate: async (expression) => {
      const out = await session.tab()!.evaluate(expression, 5_000, neverAborted);
      if (!out.ok) throw new Error(out.error);
      return String(out.value);
    },
  };
  // The editor is drawn once the user's panel preferences have loaded: its first block is there.
  await expect.poll(() => h.evaluate('document.querySelectorAll(".paragraph-block").length')).toBe('1');
});

afterEach(async () => {
  await h?.session.close();
});

describe('reads of a block editor', () => {
  it('lists the title and each block with a reference, the caret holder alone as no value, and typed text as the value', async () => {
    // The title's only content is the caret holder U+FEFF.
    expect(await h.evaluate('document.getElementById("post-title").textContent')).toBe('\ufeff');
    const before = text((await h.call('read_page', { filter: 'all' })).result);
    const title = lineOf(before, 'textbox', 'Add title');
    const block = lineOf(before, 'document', EMPTY);
    expect(refOf(title), before).toBeDefined();
    expect(refOf(block), before).toBeDefined();
    // An invisible character alone is an empty value: no value="\ufeff", no value="" either.
    expect(title, before).not.toContain('value=');
    expect(before).not.toContain('\ufeff');
    expect(block, before).not.toContain('value=');

    expect((await h.call('left_click', { target: { type: 'ref', ref: refOf(title) } })).ok).toBe(true);
    expect((await h.call('type', { text: 'Spring release notes' })).ok).toBe(true);
    expect((await h.call('left_click', { target: { type: 'ref', ref: refOf(block) } })).ok).toBe(true);
    expect((await h.call('type', { text: 'The spring release brings offline mode to every plan.' })).ok).toBe(true);

    const after = text((await h.call('read_page', { filter: 'all' })).result);
    expect(lineOf(after, 'textbox', 'Add title'), after).toMatch(/^\s*textbox "Add title" \[ref_\d+\] value="Spring release notes"$/);
    // The block is named by its content now, and reads back as the same element, its text its value.
    const typed = lineOf(after, 'document', 'Block: Paragraph');
    expect(typed, after).toMatch(/^\s*document "Block: Paragraph" \[ref_\d+\] value="The spring release brings offline mode to every plan."( focused)?$/);
    expect(refOf(typed)).toBe(refOf(block));
    expect(lineOf(after, 'document', EMPTY)).toBeUndefined();
  });

  it('finds a visible element before a submenu item parked off the page, and the title field by its placeholder', async () => {
    // The Tags panel open, as this user left it: its field "Add New Tag" is in view, while the
    // menu's fly-out "Add New" (a closer match by name) is parked at top: -1000em until hovered.
    editor.prefs.tags = true;
    try {
      const opened = await h.session.navigate(`${editor.origin}/wp-admin/post-new.php`, neverAborted);
      expect(opened.ok).toBe(true);
      await expect.poll(() => h.evaluate('String(document.getElementById("tags-body").hidden)')).toBe('false');
    } finally {
      editor.prefs.tags = false;
    }
    expect(await h.evaluate(`String(document.querySelector('.submenu a[href$="post-new.php"]').getBoundingClientRect().top < 0)`)).toBe('true');
    const found = text((await h.call('find', { query: 'Add New' })).result).split('\n');
    expect(found[0], found.join('\n')).toMatch(/^textbox "Add New Tag" \[ref_\d+\]/);
    // The submenu's item is still found, after every element that can be brought into view.
    const parked = found.findIndex((l) => /^link "Add New" \[ref_\d+\]/.test(l));
    expect(parked, found.join('\n')).toBeGreaterThan(0);

    const title = text((await h.call('find', { query: 'Post title field' })).result).split('\n')[0] ?? '';
    expect(title).toMatch(/^textbox "Add title" \[ref_\d+\]/);
  });
});
