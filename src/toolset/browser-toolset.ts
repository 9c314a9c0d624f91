/**
 * The browser use toolset (`browser_toolset_20260801`) as an action space of our loop: the
 * model reads the page's structure (read_page, find, get_page_text), acts on elements by
 * reference as well as by coordinate, sets form values directly, and works across tabs.
 *
 * What each member does is browser-driver.ts (on the SDK's toolset class); this file turns a
 * call into what the loop counts and records: the result with secrets redacted, whether it was
 * an action, its label and point for the video, its trace for the run cache; and the opening
 * that lets the model act in its first turn.
 *
 * Members served: all 27 that are on by default, plus read_console and read_network (each tab's
 * own page, in a context that reaches only the allow-list), plus javascript_exec when the
 * specification sets `allowJavascript`. file_upload is served once input files exist.
 */
import type { BetaToolResultBlockParam, BetaToolUseBlock } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { BROWSER_TOOLSET } from '../domain/action-spaces.js';
import type { ToolResultBlock } from '../model/types.js';
import { KNOWN_MEMBERS, READ_MEMBERS } from './browser-members.js';
import { BrowserToolsetDriver, TOOLSET_NAME, type BrowserToolsetOptions, type CallState } from './browser-driver.js';
import { errorResult, imageBlock, screenshotForModel, textBlock } from './results.js';
import { fromSdkResult } from './sdk-results.js';
import type { ActionReport, ActionRunContext, ActionSpace } from './types.js';
import type { ToolUseBlock } from '../contract/recording.js';

const NOT_EXECUTED = 'Not executed: an earlier action in this turn failed.';

/** The opening's overview of the page's interactive elements: a few thousand tokens at most. */
const OPENING_MAX_CHARS = 12_000;
/** The brief opening's (a model taking over a replay): what is in view, as a read would show it. */
const BRIEF_MAX_CHARS = 4_000;
/** Options listed per select in the brief: a long select must not crowd out the rest (an open dialog is read first anyway). */
const BRIEF_OPTIONS_MAX = 10;


export function createBrowserToolset(options: BrowserToolsetOptions): ActionSpace {
  const { session, geometry, secrets } = options;
  const driver = new BrowserToolsetDriver(options);
  return {
    kind: 'browser',
    toolType: BROWSER_TOOLSET,
    betas: [],
    display: geometry.display,
    guide: [
      'You act in the browser with the browser toolset. Read the page as text with read_page (filter "interactive" lists what you can act on), find (describe an element in words) and get_page_text; look at it with screenshot and zoom when the layout or images matter.',
      'Target elements by the references (ref_N) that read_page and find give; a reference lasts until the page navigates, then read again. Set form fields with form_input (text, selects by option text, checkboxes with true/false, dates as YYYY-MM-DD). Coordinates are pixels of the screenshot.',
      'You may send several calls in one turn: they run in order, the page settles after each action, and a failed call stops the rest of the turn. End a turn of actions with a read (read_page, find, get_page_text or screenshot) to see their effect.',
    ].join('\n'),
    ...((options.inputFiles ?? []).length > 0
      ? { uploadHow: 'To upload one, call file_upload with the reference of the page\'s file input (read_page shows it as "(file input)") and `paths` set to the file names.' }
      : {}),
    tools: () => [{ type: BROWSER_TOOLSET, ...(driver.configs ? { configs: structuredClone(driver.configs) as Record<string, { enabled?: boolean }> } : {}) }],
    owns: (call) => call.toolset_name === TOOLSET_NAME,
    async run(call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport> {
      const state: CallState = { context, images: 0 };
      driver.current = state;
      let wire: BetaToolResultBlockParam;
      try {
        wire = await driver.toolResult(call as BetaToolUseBlock);
      } finally {
        driver.current = undefined;
      }
      const result = redactResult(fromSdkResult(wire), secrets.redact);
      const member = state.member ?? call.name;
      const known = KNOWN_MEMBERS.has(call.name);
      const counted = known && !READ_MEMBERS.has(call.name);
      const ok = !result.is_error;
      const label = state.label ?? `${call.name}${ok ? '' : ' (refused)'}`;
      if (!ok && counted && state.label === undefined) context.beforeRun?.({ label });
      return {
        result,
        action: member,
        counted,
        ok,
        ...(ok ? {} : { error: textOf(result) }),
        label,
        ...(state.point ? { point: state.point } : {}),
        images: result.content.filter((b) => b.type === 'image').length,
        changesPage: counted && ok,
        ...(ok && counted && state.trace ? { trace: state.trace } : {}),
      };
    },
    async opening(signal, options) {
      // The page's interactive elements with their references, and what it looks like: the model
      // can act in its first turn instead of spending it on a read.
      await session.settle(signal);
      const shot = imageBlock(await screenshotForModel(session, geometry, signal));
      const tab = session.tab();
      // The whole page's, not only the viewport's: a form's last fields and its button are below
      // the fold more often than not, and a click by reference scrolls to them.
      // Brief (a model taking over a replay): those in view, as read_page shows them.
      const brief = options?.brief === true;
      const read = tab ? await tab.readPage({ filter: 'interactive', wholePage: !brief, maxChars: brief ? BRIEF_MAX_CHARS : OPENING_MAX_CHARS, ...(brief ? { optionsMax: BRIEF_OPTIONS_MAX } : {}) }, signal) : undefined;
      const title = tab ? await tab.title(signal) : '';
      const elements = read?.ok && read.value.lines.length ? read.value.lines.join('\n') : '(no interactive elements)';
      const more = read?.ok && read.value.omitted > 0 ? `\n[${read.value.omitted} more elements not shown: use find or read_page]` : '';
      const where = brief ? 'in the viewport (read_page or find show the rest)' : 'in and below the viewport';
      const text = `The active tab is ${tab?.id ?? 'tab_1'}: ${secrets.redact(title)} (${secrets.redact(session.currentUrl())}). The page's interactive elements, ${where}:\n${secrets.redact(elements)}${more}`;
      return [textBlock(text), shot];
    },
    notExecuted: (call) => errorResult(call, NOT_EXECUTED),
  };
}

/** Secrets out of every text a result carries (a page can echo a value anywhere). Images are left as they are. */
function redactResult(result: ToolResultBlock, redact: (text: string) => string): ToolResultBlock {
  return {
    ...result,
    content: result.content.map((block) => {
      if (block.type === 'text') return { ...block, text: redact(block.text) };
      if (block.type === 'browser_state') {
        const changes = block.state_changes?.map((change) => Object.fromEntries(Object.entries(change).map(([k, v]) => [k, typeof v === 'string' ? redact(v) : v])) as typeof change);
        return { ...block, tabs: block.tabs.map((tab) => ({ ...tab, title: redact(tab.title), url: redact(tab.url) })), ...(changes ? { state_changes: changes } : {}) };
      }
      return block;
    }),
  };
}

function textOf(result: ToolResultBlock): string {
  return result.content.map((b) => (b.type === 'text' ? b.text : '')).join(' ').trim();
}
