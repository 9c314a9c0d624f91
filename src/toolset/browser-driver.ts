/**
 * The browser use toolset's members on our browser port: a driver on the SDK's
 * `BetaAbstractBrowserToolset20260801`, which holds the wire rules (one call at a time, the URL
 * policy before `navigate`, `browser_state` on every successful result and only there, a tab
 * member's result being that block alone, `new_tab`'s checks, the acknowledgment texts), so
 * this file says only what each member does. What the loop needs besides the result (was it an
 * action, where did it land, what did it act on) is noted per call in `current`, which
 * browser-toolset.ts reads once the SDK has answered.
 */
import { BetaAbstractBrowserToolset20260801, type BetaBrowserState, type BetaToolsetCallContext } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type {
  BetaBrowserClickTarget,
  BetaBrowserCloseTabInput,
  BetaBrowserCoordinateTarget,
  BetaBrowserDoubleClickInput,
  BetaBrowserFileUploadInput,
  BetaBrowserFindInput,
  BetaBrowserFormInputInput,
  BetaBrowserGetPageTextInput,
  BetaBrowserHoldKeyInput,
  BetaBrowserHoverInput,
  BetaBrowserJavascriptExecInput,
  BetaBrowserKeyInput,
  BetaBrowserLeftClickDragInput,
  BetaBrowserLeftClickInput,
  BetaBrowserLeftMouseDownInput,
  BetaBrowserLeftMouseUpInput,
  BetaBrowserListTabsInput,
  BetaBrowserMiddleClickInput,
  BetaBrowserMouseMoveInput,
  BetaBrowserNavigateInput,
  BetaBrowserNewTabInput,
  BetaBrowserReadConsoleInput,
  BetaBrowserReadNetworkInput,
  BetaBrowserReadPageInput,
  BetaBrowserRightClickInput,
  BetaBrowserScreenshotInput,
  BetaBrowserScrollInput,
  BetaBrowserScrollToInput,
  BetaBrowserStateTabEntry,
  BetaBrowserSwitchTabInput,
  BetaBrowserTripleClickInput,
  BetaBrowserTypeInput,
  BetaBrowserWaitInput,
  BetaBrowserZoomInput,
} from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { COMPUTER_TOOLSET } from '../domain/action-spaces.js';
import { enterValue } from '../domain/input-references.js';
import type { BrowserChange, BrowserTab, ElementIdentity, Point } from '../browser/types.js';
import { TAB_SWITCHING_MEMBERS } from './browser-members.js';
import { browserToolsetPolicies, normaliseUrl } from './browser-policies.js';
import { executeComputerAction } from './computer-actions.js';
import type { DisplayGeometry } from './computer-types.js';
import { effectOf, readState } from '../domain/element-state.js';
import { rankElements } from './find-rank.js';
import { keyboardTarget, keyedTo } from './keyboard-target.js';
import { formatConsole, formatNetwork } from './page-logs.js';
import { popupClosedLine, screenshotForModel } from './results.js';
import { shownAs } from './secret-typing.js';
import { createWidgetHands, fillWidget } from './widget-input.js';
import type { ActionRunContext, ActionSpaceOptions, ActionTrace } from './types.js';

export const TOOLSET_NAME = 'browser';

/** The documented cap of read_page: past it the text says so, and how to narrow the read. */
export const READ_PAGE_MAX_CHARS = 50_000;
/** get_page_text has no documented cap; one long page must not fill the context. */
export const PAGE_TEXT_MAX_CHARS = 50_000;
/** Console and network reads, each. */
export const LOG_TEXT_MAX_CHARS = 20_000;
/** javascript_exec's value, and how long the script may run. */
export const SCRIPT_RESULT_MAX_CHARS = 20_000;
export const SCRIPT_TIMEOUT_MS = 10_000;
const FIND_LIMIT = 20;
const MAX_WAIT_S = 30;
const DEFAULT_SCROLL_NOTCHES = 3;
const MAX_SCROLL_NOTCHES = 10;
/** Room kept under the read_page cap for the note that says the text was cut. */
const NOTE_ROOM = 400;

export interface BrowserToolsetOptions extends ActionSpaceOptions {
  geometry: DisplayGeometry;
}

/** What one member call did, beyond its result: read by the action space after the SDK answers. */
export interface CallState {
  context: ActionRunContext;
  member?: string;
  label?: string;
  point?: Point;
  trace?: ActionTrace;
  images: number;
}

/** Members that send keys to the focused element. */
const KEYBOARD = new Set(['key', 'type', 'hold_key']);

export class BrowserToolsetDriver extends BetaAbstractBrowserToolset20260801 {
  current: CallState | undefined;
  /**
   * The element the model last acted on by reference, and in which tab: a key or text sent when
   * no element has the focus goes back to it (form_input leaves its field without the focus, as
   * a person leaves it). Any other action since forgets it.
   */
  private lastTarget: { tabId: string; ref: string } | undefined;
  /** The session's changes taken before the report (`limitNotes`), reported with it. */
  private heldChanges: BrowserChange[] = [];
  /** Lines of popups closed at the tab limit the model has not read yet. */
  private untoldLimits: string[] = [];

  constructor(private readonly options: BrowserToolsetOptions) {
    super({ ...browserToolsetPolicies(options), browserState: () => this.report() });
  }

  // ---- bookkeeping ----

  private get state(): CallState {
    if (!this.current) throw new Error('the browser toolset was called outside a run');
    return this.current;
  }

  private get signal(): AbortSignal {
    return this.state.context.signal;
  }

  /** The tab a call names (made active for members that act), else the active one. */
  private async tabFor(name: string, input: { tab_id?: string | null }): Promise<BrowserTab> {
    const { session } = this.options;
    const id = input.tab_id ?? undefined;
    const tab = session.tab(id === '' ? undefined : id);
    if (!tab) throw new Error(`there is no open tab ${JSON.stringify(id)}; call list_tabs to see the tabs`);
    if (id && TAB_SWITCHING_MEMBERS.has(name) && tab !== session.tab()) await session.switchTab(tab.id, this.signal);
    return tab;
  }

  /** Notes an action about to touch the page (the video marks it now) and what the run cache keeps of it. */
  /** `focus`: record the focused element (read now, or, when given, already read) as where the keys went. */
  private async begin(member: string, tab: BrowserTab, what: { label: string; point?: Point; input: unknown; target?: ElementIdentity | null; focus?: boolean | ElementIdentity }): Promise<void> {
    const state = this.state;
    if (!KEYBOARD.has(member)) this.lastTarget = undefined;
    state.member = member;
    state.label = what.label;
    if (what.point) state.point = what.point;
    const trace: ActionTrace = { tool: member, toolsetName: TOOLSET_NAME, input: { ...(what.input as Record<string, unknown>) }, url: tab.url() };
    if (what.target) trace.target = what.target;
    if (what.focus && state.context.trace !== false) {
      const focused = what.focus === true ? (await tab.focused(this.signal).catch(() => null))?.identity : what.focus;
      if (focused) {
        trace.focus = focused;
        // The element itself, found now, before the keys change its name (a block editor's
        // "Empty block" is named by its text once typed into): its value is read back from it.
        const found = await tab.locate(focused, this.signal).catch(() => undefined);
        if (found?.ok) trace.ref = found.value.ref;
      }
    }
    state.trace = trace;
    state.context.beforeRun?.({ label: what.label, ...(what.point ? { point: what.point } : {}) });
  }

  /** Waits for the page to settle after the last input event, or after `since` (an action that changed the page by script). */
  private settle(since?: number): Promise<void> {
    return this.options.session.settle(this.signal, since);
  }

  /** A target as a viewport point: a coordinate in the screenshot's frame, or the element of a reference. */
  private async pointOf(tab: BrowserTab, target: BetaBrowserClickTarget | undefined): Promise<{ point: Point; shown: Point; ref?: string; identity?: ElementIdentity | null }> {
    if (!target || typeof target !== 'object') throw new Error('target is required: {"type": "ref", "ref": "ref_N"} or {"type": "coordinate", "x": …, "y": …}');
    if (target.type === 'ref') {
      const ref = String(target.ref ?? '');
      const identity = await tab.identify(ref, this.signal);
      if (!identity.ok) throw new Error(identity.error);
      const at = await tab.pointOf(ref, this.signal);
      if (!at.ok) throw new Error(at.error);
      return { point: at.value, shown: this.options.geometry.toDisplay(at.value.x, at.value.y), ref, identity: identity.value };
    }
    if (target.type === 'coordinate') {
      const shown = this.coordinate(target);
      const point = this.options.geometry.toViewport(shown.x, shown.y);
      return { point, shown, identity: await tab.identifyAt(point, this.signal).catch(() => null) };
    }
    throw new Error(`target.type must be "ref" or "coordinate", got ${JSON.stringify((target as { type?: unknown }).type)}`);
  }

  private coordinate(target: BetaBrowserCoordinateTarget | undefined): Point {
    const { display } = this.options.geometry;
    if (!target || target.type !== 'coordinate' || typeof target.x !== 'number' || typeof target.y !== 'number' || !Number.isFinite(target.x) || !Number.isFinite(target.y)) {
      throw new Error('a coordinate target is required: {"type": "coordinate", "x": …, "y": …} in pixels of the screenshot');
    }
    const x = Math.round(target.x);
    const y = Math.round(target.y);
    if (x < 0 || y < 0 || x >= display.width || y >= display.height) {
      throw new Error(`(${x}, ${y}) is outside the viewport: x must be 0–${display.width - 1} and y 0–${display.height - 1}`);
    }
    return { x, y };
  }

  /** Runs one action of the computer table (mouse and keyboard are the same as computer use's), then settles. */
  private async act(tab: BrowserTab, member: string, computerInput: Record<string, unknown>, note: { label: string; point?: Point; target?: ElementIdentity | null; focus?: boolean | ElementIdentity; modelInput: unknown }): Promise<string | undefined> {
    await this.begin(member, tab, { label: note.label, ...(note.point ? { point: note.point } : {}), input: note.modelInput, ...(note.target !== undefined ? { target: note.target } : {}), ...(note.focus ? { focus: note.focus } : {}) });
    const { session, geometry, secrets } = this.options;
    const outcome = await executeComputerAction(computerInput, { session, geometry, toolVersion: COMPUTER_TOOLSET, vault: secrets, signal: this.signal });
    if (!outcome.ok) throw new Error(outcome.error);
    await this.settle();
    const notes = this.limitNotes();
    // No dialog opens for a file chooser: the model learns of it here.
    if ((this.options.inputFiles ?? []).length > 0 && session.pendingFileChooser()) notes.push('The page opened a file chooser: answer it with file_upload (the reference of the control that opened it will do) and the names of input files.');
    return notes.length > 0 ? notes.join(' ') : undefined;
  }

  /**
   * Lines the model reads in the result itself: popups closed at the tab limit. The browser_state
   * block has no kind for them (the SDK shows any refused navigation as one fixed line), so the
   * why is told here (docs/security.md#limits); the changes are still reported after.
   */
  private limitNotes(): string[] {
    this.takeChanges();
    return this.untoldLimits.splice(0);
  }

  /** The session's changes since the last take, held for the report; the lines of closed popups for the next result that can carry them. */
  private takeChanges(): void {
    const fresh = this.options.session.drainChanges();
    this.heldChanges.push(...fresh);
    for (const change of fresh) if (change.type === 'popup_closed') this.untoldLimits.push(popupClosedLine(change, this.options.secrets.redact));
  }

  /** Where the keys of `key` or `type` will go (keyboard-target.ts); the result says which. */
  private keyboardTarget(tab: BrowserTab) {
    return keyboardTarget(tab, this.lastTarget?.tabId === tab.id ? this.lastTarget.ref : undefined, this.signal);
  }

  // ---- the tab report attached to every successful result ----

  private async report(): Promise<BetaBrowserState> {
    const { session, secrets } = this.options;
    const tabs = await session.tabs(this.signal);
    this.takeChanges();
    const changes = this.heldChanges.splice(0).map((change) => toStateChange(change, secrets.redact));
    return {
      tabs: tabs.map((tab) => ({ tab_id: tab.id, title: secrets.redact(tab.title), url: secrets.redact(tab.url), active: tab.active })),
      ...(changes.length ? { state_changes: changes } : {}),
    };
  }

  // ---- members ----

  protected override async navigate(_ctx: BetaToolsetCallContext, input: BetaBrowserNavigateInput) {
    const tab = await this.tabFor('navigate', input);
    const word = input.url === 'back' || input.url === 'forward' || input.url === 'reload' ? input.url : undefined;
    const target = word ? undefined : normaliseUrl(input.url);
    if (target && !target.ok) throw new Error(target.error);
    const url = target?.ok ? target.url : '';
    await this.begin('navigate', tab, { label: `navigate ${word ?? url}`, input });
    const result = word ? await this.options.session.history(word, this.signal) : await this.options.session.navigate(url, this.signal);
    if (!result.ok) throw new Error(`the navigation failed: ${result.error ?? 'unknown error'}`);
    await this.settle();
    return { url: result.url, title: await tab.title(this.signal), ...(result.status !== undefined ? { status: result.status } : {}) };
  }

  protected override async screenshot(_ctx: BetaToolsetCallContext, input: BetaBrowserScreenshotInput) {
    await this.tabFor('screenshot', input);
    this.state.member = 'screenshot';
    this.state.label = 'screenshot';
    await this.settle();
    const shot = await screenshotForModel(this.options.session, this.options.geometry, this.signal);
    this.state.images++;
    return { data: shot.data.toString('base64'), mediaType: shot.mediaType };
  }

  protected override async zoom(_ctx: BetaToolsetCallContext, input: BetaBrowserZoomInput) {
    await this.tabFor('zoom', input);
    const { session, geometry, secrets } = this.options;
    const outcome = await executeComputerAction({ action: 'zoom', region: input.region }, { session, geometry, toolVersion: COMPUTER_TOOLSET, vault: secrets, signal: this.signal });
    if (!outcome.ok) throw new Error(outcome.error);
    if (!outcome.image) throw new Error('the zoomed region could not be captured');
    this.state.member = 'zoom';
    this.state.label = outcome.label;
    this.state.images++;
    return { data: outcome.image.data.toString('base64'), mediaType: outcome.image.mediaType };
  }

  private async click(member: string, action: string, input: BetaBrowserLeftClickInput) {
    const tab = await this.tabFor(member, input);
    const at = await this.pointOf(tab, input.target);
    const modifiers = input.modifiers ? String(input.modifiers) : undefined;
    const verb = member.replace('_', ' ');
    // The element's states before the click and after it: what it changed is its effect (element-state.ts).
    const traced = at.ref !== undefined && this.state.context.trace !== false;
    const before = traced ? await readState(tab, at.ref!, this.signal) : undefined;
    const note = await this.act(tab, member, { action, coordinate: [at.shown.x, at.shown.y], ...(modifiers ? { text: modifiers } : {}) }, {
      label: `${modifiers ? `${modifiers}+` : ''}${verb} ${at.ref ?? `(${at.shown.x}, ${at.shown.y})`}${describeTarget(at.identity)}`,
      point: at.point,
      target: at.identity ?? null,
      modelInput: input,
    });
    const trace = this.state.trace;
    if (traced && trace) {
      trace.ref = at.ref;
      const effect = effectOf(before, await readState(tab, at.ref!, this.signal));
      if (effect) trace.effect = effect;
    }
    if (at.ref) this.lastTarget = { tabId: tab.id, ref: at.ref };
    return note;
  }

  protected override left_click(_ctx: BetaToolsetCallContext, input: BetaBrowserLeftClickInput) {
    return this.click('left_click', 'left_click', input);
  }
  protected override right_click(_ctx: BetaToolsetCallContext, input: BetaBrowserRightClickInput) {
    return this.click('right_click', 'right_click', input);
  }
  protected override middle_click(_ctx: BetaToolsetCallContext, input: BetaBrowserMiddleClickInput) {
    return this.click('middle_click', 'middle_click', input);
  }
  protected override double_click(_ctx: BetaToolsetCallContext, input: BetaBrowserDoubleClickInput) {
    return this.click('double_click', 'double_click', input);
  }
  protected override triple_click(_ctx: BetaToolsetCallContext, input: BetaBrowserTripleClickInput) {
    return this.click('triple_click', 'triple_click', input);
  }

  protected override async hover(_ctx: BetaToolsetCallContext, input: BetaBrowserHoverInput) {
    const tab = await this.tabFor('hover', input);
    const at = await this.pointOf(tab, input.target);
    await this.act(tab, 'hover', { action: 'mouse_move', coordinate: [at.shown.x, at.shown.y] }, {
      label: `hover ${at.ref ?? `(${at.shown.x}, ${at.shown.y})`}${describeTarget(at.identity)}`,
      point: at.point,
      target: at.identity ?? null,
      modelInput: input,
    });
  }

  protected override async left_click_drag(_ctx: BetaToolsetCallContext, input: BetaBrowserLeftClickDragInput) {
    const tab = await this.tabFor('left_click_drag', input);
    const from = this.coordinate(input.from);
    const to = this.coordinate(input.target);
    const end = this.options.geometry.toViewport(to.x, to.y);
    await this.act(tab, 'left_click_drag', { action: 'left_click_drag', start_coordinate: [from.x, from.y], coordinate: [to.x, to.y] }, {
      label: `drag (${from.x}, ${from.y}) → (${to.x}, ${to.y})`,
      point: end,
      target: await tab.identifyAt(this.options.geometry.toViewport(from.x, from.y), this.signal).catch(() => null),
      modelInput: input,
    });
  }

  private async pointerAction(member: string, action: string, verb: string, input: { target: BetaBrowserCoordinateTarget; tab_id?: string | null }) {
    const tab = await this.tabFor(member, input);
    const shown = this.coordinate(input.target);
    const point = this.options.geometry.toViewport(shown.x, shown.y);
    await this.act(tab, member, { action, coordinate: [shown.x, shown.y] }, { label: `${verb} (${shown.x}, ${shown.y})`, point, target: await tab.identifyAt(point, this.signal).catch(() => null), modelInput: input });
  }

  protected override left_mouse_down(_ctx: BetaToolsetCallContext, input: BetaBrowserLeftMouseDownInput) {
    return this.pointerAction('left_mouse_down', 'left_mouse_down', 'mouse down at', input);
  }
  protected override left_mouse_up(_ctx: BetaToolsetCallContext, input: BetaBrowserLeftMouseUpInput) {
    return this.pointerAction('left_mouse_up', 'left_mouse_up', 'mouse up at', input);
  }
  protected override mouse_move(_ctx: BetaToolsetCallContext, input: BetaBrowserMouseMoveInput) {
    return this.pointerAction('mouse_move', 'mouse_move', 'move to', input);
  }

  protected override async scroll(_ctx: BetaToolsetCallContext, input: BetaBrowserScrollInput) {
    const tab = await this.tabFor('scroll', input);
    const shown = this.coordinate(input.target);
    const amount = input.scroll_amount ?? DEFAULT_SCROLL_NOTCHES;
    if (!Number.isInteger(amount) || amount < 1 || amount > MAX_SCROLL_NOTCHES) throw new Error(`scroll_amount must be a whole number of notches from 1 to ${MAX_SCROLL_NOTCHES}`);
    const point = this.options.geometry.toViewport(shown.x, shown.y);
    await this.act(tab, 'scroll', { action: 'scroll', coordinate: [shown.x, shown.y], scroll_direction: input.scroll_direction, scroll_amount: amount }, {
      label: `scroll ${String(input.scroll_direction)} ${amount} at (${shown.x}, ${shown.y})`,
      point,
      target: await tab.identifyAt(point, this.signal).catch(() => null),
      modelInput: input,
    });
  }

  protected override async scroll_to(_ctx: BetaToolsetCallContext, input: BetaBrowserScrollToInput) {
    const tab = await this.tabFor('scroll_to', input);
    const ref = refOf(input.target);
    const identity = await tab.identify(ref, this.signal);
    if (!identity.ok) throw new Error(identity.error);
    await this.begin('scroll_to', tab, { label: `scroll_to ${ref}${describeTarget(identity.value)}`, input, target: identity.value });
    const scrolledAt = Date.now();
    const done = await tab.scrollTo(ref, this.signal);
    if (!done.ok) throw new Error(done.error);
    await this.settle(scrolledAt);
  }

  protected override async type_(_ctx: BetaToolsetCallContext, input: BetaBrowserTypeInput) {
    const tab = await this.tabFor('type', input);
    if (typeof input.text !== 'string' || input.text === '') throw new Error('text must be a non-empty string');
    const into = await this.keyboardTarget(tab);
    // The label keeps the {{placeholder}}; only the keystrokes carry the secret.
    const note = await this.act(tab, 'type', { action: 'type', text: input.text }, { label: `type ${quote(input.text)}`, ...keyedTo(into), modelInput: input });
    return this.options.secrets.redact(note ? `${into.note} ${note}` : into.note);
  }

  protected override async key(_ctx: BetaToolsetCallContext, input: BetaBrowserKeyInput) {
    const tab = await this.tabFor('key', input);
    const into = await this.keyboardTarget(tab);
    const note = await this.act(tab, 'key', { action: 'key', text: input.text, ...(input.repeat != null ? { repeat: input.repeat } : {}) }, {
      label: `key ${String(input.text).trim()}${input.repeat && input.repeat > 1 ? ` ×${input.repeat}` : ''}`,
      ...keyedTo(into),
      modelInput: input,
    });
    return this.options.secrets.redact(note ? `${into.note} ${note}` : into.note);
  }

  protected override async hold_key(_ctx: BetaToolsetCallContext, input: BetaBrowserHoldKeyInput) {
    const tab = await this.tabFor('hold_key', input);
    if (typeof input.duration !== 'number' || input.duration > MAX_WAIT_S) throw new Error(`duration must be a number of seconds from 0 to ${MAX_WAIT_S}`);
    await this.act(tab, 'hold_key', { action: 'hold_key', text: input.text, duration: input.duration }, { label: `hold_key ${String(input.text).trim()} for ${input.duration}s`, focus: true, modelInput: input });
  }

  protected override async wait(_ctx: BetaToolsetCallContext, input: BetaBrowserWaitInput) {
    const tab = await this.tabFor('wait', input);
    if (typeof input.duration !== 'number' || input.duration > MAX_WAIT_S) throw new Error(`duration must be a number of seconds from 0 to ${MAX_WAIT_S}`);
    await this.act(tab, 'wait', { action: 'wait', duration: input.duration }, { label: `wait ${input.duration}s`, modelInput: input });
  }

  protected override async form_input(_ctx: BetaToolsetCallContext, input: BetaBrowserFormInputInput) {
    const tab = await this.tabFor('form_input', input);
    const ref = refOf(input.target);
    const value = input.value;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') throw new Error('value must be a string, a number or a boolean');
    const identity = await tab.identify(ref, this.signal);
    if (!identity.ok) throw new Error(identity.error);
    // Scrolled into view and marked on the video where the field is; a covered field can still take a value.
    const at = await tab.pointOf(ref, this.signal);
    await this.begin('form_input', tab, {
      label: `form_input ${ref}${describeTarget(identity.value)} = ${typeof value === 'string' ? quote(value) : String(value)}`,
      ...(at.ok ? { point: at.value } : {}),
      input,
      target: identity.value,
    });
    if (this.state.trace) this.state.trace.ref = ref;
    // `{{path}}` names of input values become the values (docs/run-cache.md#inputs-by-reference).
    const entered = enterValue(this.options.secrets, value);
    // A widget drawn by a script is filled by hand (widget-input.ts), then read back.
    const widget = await tab.widget(ref, this.signal);
    if (widget.ok && widget.value.kind !== 'none') {
      if (entered.secret) throw new Error(`${ref} is a ${widget.value.kind === 'choice' ? 'list of options' : widget.value.kind === 'date' ? 'calendar' : 'switch'}: a secret goes only into a text field`);
      const { session, geometry, secrets } = this.options;
      const hands = createWidgetHands(tab, { session, geometry, vault: secrets, signal: this.signal, settle: () => this.settle() });
      const filled = await fillWidget(hands, ref, widget.value, entered.value);
      if (!filled.ok) throw new Error(filled.error);
      this.lastTarget = { tabId: tab.id, ref };
      return this.options.secrets.redact(filled.note);
    }
    if (entered.secret) await tab.hideText(ref, this.signal, shownAs(String(value)));
    const set = await tab.setValue(ref, entered.value, this.signal);
    if (!set.ok) throw new Error(set.error);
    this.lastTarget = { tabId: tab.id, ref };
    // Set by script, not by input events: settling waits for what the page does from the moment
    // it took the value (a poll's next look at the field), by the page's own clock.
    await this.settle(set.value.at ?? Date.now());
    // A select answers with the option it chose, so the model knows which one a text matched.
    return set.value.shown && typeof entered.value === 'string' && set.value.shown !== entered.value ? `Selected "${this.options.secrets.redact(set.value.shown)}".` : undefined;
  }

  protected override async read_page(_ctx: BetaToolsetCallContext, input: BetaBrowserReadPageInput) {
    const tab = await this.tabFor('read_page', input);
    this.state.member = 'read_page';
    this.state.label = `read_page${input.filter ? ` ${input.filter}` : ''}${input.ref ? ` ${input.ref}` : ''}`;
    if (input.filter != null && input.filter !== 'interactive' && input.filter !== 'all') throw new Error('filter must be "interactive" or "all" (or omitted for every visible element)');
    if (input.depth != null && (!Number.isInteger(input.depth) || input.depth < 1)) throw new Error('depth must be a whole number of at least 1');
    const read = await tab.readPage({
      maxChars: READ_PAGE_MAX_CHARS - NOTE_ROOM,
      ...(input.filter ? { filter: input.filter } : {}),
      ...(input.depth != null ? { depth: input.depth } : {}),
      ...(input.ref ? { ref: input.ref } : {}),
    }, this.signal);
    if (!read.ok) throw new Error(read.error);
    const { lines, omitted, deeper } = read.value;
    const notes: string[] = [];
    if (omitted > 0) notes.push(`[read_page output cut at ${READ_PAGE_MAX_CHARS.toLocaleString('en-US')} characters: ${omitted} more elements not shown. Read less at once: a smaller depth, filter "interactive", or a ref.]`);
    if (deeper > 0) notes.push(`[${deeper} elements nested deeper than depth ${input.depth ?? 15} not shown: read_page with the ref of their parent to see them.]`);
    if (lines.length === 0) notes.push(input.filter === 'all' ? '(the page shows no elements)' : '(no elements in the viewport; try filter "all" or scroll)');
    return this.options.secrets.redact([...lines, ...notes].join('\n'));
  }

  protected override async find(_ctx: BetaToolsetCallContext, input: BetaBrowserFindInput) {
    const tab = await this.tabFor('find', input);
    const query = typeof input.query === 'string' ? input.query.trim() : '';
    this.state.member = 'find';
    this.state.label = `find ${quote(query)}`;
    if (!query) throw new Error('query must describe the element to find, e.g. "search field"');
    const lines = await tab.find((candidates) => rankElements(query, candidates), FIND_LIMIT, this.signal);
    if (lines.length === 0) return `No element matches "${query}". Try other words, or read_page with filter "all".`;
    return this.options.secrets.redact(lines.join('\n'));
  }

  protected override async get_page_text(_ctx: BetaToolsetCallContext, input: BetaBrowserGetPageTextInput) {
    const tab = await this.tabFor('get_page_text', input);
    this.state.member = 'get_page_text';
    this.state.label = 'get_page_text';
    const page = await tab.pageText(PAGE_TEXT_MAX_CHARS, this.signal);
    const note = page.cut ? `\n[page text cut at ${PAGE_TEXT_MAX_CHARS.toLocaleString('en-US')} of ${page.total.toLocaleString('en-US')} characters: use find or read_page for the rest]` : '';
    return this.options.secrets.redact(`${page.text || '(the page shows no text)'}${note}`);
  }

  protected override async read_console(_ctx: BetaToolsetCallContext, input: BetaBrowserReadConsoleInput) {
    const tab = await this.tabFor('read_console', input);
    this.state.member = 'read_console';
    this.state.label = 'read_console';
    const notes = this.limitNotes().map((note) => `[${note}]\n`).join('');
    return this.options.secrets.redact(notes + formatConsole(tab.drainConsole(), LOG_TEXT_MAX_CHARS));
  }

  protected override async read_network(_ctx: BetaToolsetCallContext, input: BetaBrowserReadNetworkInput) {
    const tab = await this.tabFor('read_network', input);
    this.state.member = 'read_network';
    this.state.label = 'read_network';
    return this.options.secrets.redact(formatNetwork(tab.drainNetwork(), LOG_TEXT_MAX_CHARS));
  }

  protected override async javascript_exec(_ctx: BetaToolsetCallContext, input: BetaBrowserJavascriptExecInput) {
    const tab = await this.tabFor('javascript_exec', input);
    if (typeof input.text !== 'string' || input.text.trim() === '') throw new Error('text must be a JavaScript expression');
    await this.begin('javascript_exec', tab, { label: `javascript_exec ${quote(input.text)}`, input });
    const ranAt = Date.now();
    const result = await tab.evaluate(input.text, SCRIPT_TIMEOUT_MS, this.signal);
    if (!result.ok) throw new Error(`the script threw: ${result.error}`);
    await this.settle(ranAt);
    const text = result.value.length > SCRIPT_RESULT_MAX_CHARS ? `${result.value.slice(0, SCRIPT_RESULT_MAX_CHARS)}\n[value cut at ${SCRIPT_RESULT_MAX_CHARS.toLocaleString('en-US')} characters]` : result.value;
    const notes = this.limitNotes();
    return this.options.secrets.redact([text, ...notes.map((note) => `[${note}]`)].join('\n'));
  }

  protected override async file_upload(_ctx: BetaToolsetCallContext, input: BetaBrowserFileUploadInput) {
    const tab = await this.tabFor('file_upload', input);
    const ref = refOf(input.target);
    const names = input.paths ?? [];
    if (names.length === 0) throw new Error('paths must name at least one input file');
    const identity = await tab.identify(ref, this.signal);
    if (!identity.ok) throw new Error(identity.error);
    await this.begin('file_upload', tab, { label: `file_upload ${ref}${describeTarget(identity.value)} ${names.map((n) => JSON.stringify(n)).join(', ')}`, input, target: identity.value });
    const given = await tab.setFiles(ref, names, this.signal);
    if (!given.ok) throw new Error(given.error);
    await this.settle();
  }

  protected override async new_tab(_ctx: BetaToolsetCallContext, _input: BetaBrowserNewTabInput): Promise<BetaBrowserStateTabEntry> {
    const tab = this.options.session.tab()!;
    await this.begin('new_tab', tab, { label: 'new_tab', input: {} });
    const opened = await this.options.session.newTab(this.signal);
    return { tab_id: opened.id, title: opened.title, url: opened.url, active: true };
  }

  protected override async list_tabs(_ctx: BetaToolsetCallContext, _input: BetaBrowserListTabsInput): Promise<BetaBrowserStateTabEntry[]> {
    this.state.member = 'list_tabs';
    this.state.label = 'list_tabs';
    return (await this.options.session.tabs(this.signal)).map((t) => ({ tab_id: t.id, title: t.title, url: t.url, active: t.active }));
  }

  protected override async switch_tab(_ctx: BetaToolsetCallContext, input: BetaBrowserSwitchTabInput): Promise<BetaBrowserStateTabEntry> {
    const { session } = this.options;
    const tab = session.tab(input.tab_id);
    if (!tab) throw new Error(`there is no open tab ${JSON.stringify(input.tab_id)}; call list_tabs to see the tabs`);
    await this.begin('switch_tab', tab, { label: `switch_tab ${input.tab_id}`, input });
    await session.switchTab(tab.id, this.signal);
    await this.settle();
    return { tab_id: tab.id, title: await tab.title(this.signal), url: tab.url(), active: true };
  }

  protected override async close_tab(_ctx: BetaToolsetCallContext, input: BetaBrowserCloseTabInput): Promise<void> {
    const { session } = this.options;
    const tab = session.tab(input.tab_id);
    if (!tab) throw new Error(`there is no open tab ${JSON.stringify(input.tab_id)}; call list_tabs to see the tabs`);
    await this.begin('close_tab', tab, { label: `close_tab ${input.tab_id}`, input });
    const closed = await session.closeTab(tab.id, this.signal);
    if (!closed.ok) throw new Error(closed.error);
  }
}

function refOf(target: { ref?: unknown; type?: unknown } | undefined): string {
  if (!target || typeof target !== 'object' || target.type !== 'ref' || typeof target.ref !== 'string') throw new Error('target must be {"type": "ref", "ref": "ref_N"} from read_page or find');
  return target.ref;
}

function toStateChange(change: BrowserChange, redact: (text: string) => string): NonNullable<BetaBrowserState['state_changes']>[number] {
  switch (change.type) {
    case 'tab_opened':
      return { type: 'tab_opened', tab_id: change.tabId };
    case 'navigation_refused':
    case 'popup_closed':
      return { type: 'navigation_refused' };
    case 'dialog_dismissed':
      return { type: 'dialog_dismissed', kind: change.kind, message: redact(change.message) };
    case 'download': {
      // The saved file's local path is never shown: the model cannot read it from here.
      const { id, state, url, bytes, error } = change.download;
      if (state === 'started') return { type: 'download_started', download_id: id, url: redact(url) };
      if (state === 'completed') return { type: 'download_completed', download_id: id, url: redact(url), ...(bytes !== undefined ? { size_bytes: bytes } : {}) };
      return { type: 'download_failed', download_id: id, url: redact(url), ...(error ? { error: redact(error) } : {}) };
    }
  }
}

function describeTarget(identity: ElementIdentity | null | undefined): string {
  if (!identity) return '';
  return ` (${identity.role}${identity.name ? ` ${quote(identity.name)}` : ''})`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}
