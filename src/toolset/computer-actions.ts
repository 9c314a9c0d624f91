/**
 * Executes the actions of Anthropic's computer tool against a browser session: ONE table,
 * action name → the parameters it accepts + a planner that validates the input and returns
 * what to run. Coordinates arrive in display pixels and are converted with the geometry;
 * keys arrive in xdotool syntax and are mapped to DOM key names.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { COMPUTER_TOOLSET, ZOOM_COMPUTER_TOOL_TYPES, type ComputerToolType } from '../domain/action-spaces.js';
import type { BrowserSession, MouseButton, Screenshot } from '../browser/types.js';
import { enterText } from '../domain/input-references.js';
import { shownAs, typeSecretText } from './secret-typing.js';
import type { ActionContext, ActionOutcome, ExecuteComputerAction } from './computer-types.js';
import {
  type Check,
  type ParamName,
  type Point,
  type ToolInput,
  isRecord,
  readCoordinate,
  readDuration,
  readRepeat,
  TOOLSET_MAX_DURATION_S,
  readHeldKeys,
  readKeySequence,
  readOptionalCoordinate,
  readRegion,
  readScroll,
  readText,
  unexpectedParams,
} from './computer-params.js';
import { MODEL_IMAGE_QUALITY } from './results.js';

/**
 * CSS pixels per wheel click. Chromium scrolls 100 px per notch on Windows and in headless
 * mode; a fixed figure keeps `scroll_amount` predictable for the model.
 */
export const SCROLL_PX_PER_CLICK = 100;

/** Intermediate pointer moves of a drag, so pages that track mousemove see a path. */
const DRAG_STEPS = 10;

/** What an action produced beyond "done". */
interface RunResult {
  text?: string;
  image?: Screenshot;
}

/** A validated action, ready to run. */
interface Plan {
  label: string;
  /** Where a pointer action lands, viewport px. */
  point?: Point;
  run(): Promise<RunResult | void>;
}

interface ActionSpec {
  /** Parameters the action takes; any other known parameter is refused. */
  params: readonly ParamName[];
  /** False for pure queries that do not touch the page. */
  counted: boolean;
  wantsScreenshot: boolean;
  /** Tool versions that define the action (all when absent). */
  versions?: readonly ComputerToolType[];
  plan(input: ToolInput, context: ActionContext): Check<Plan>;
}

const CLICK_PARAMS: readonly ParamName[] = ['coordinate', 'text', 'key'];

const ACTIONS: Readonly<Record<string, ActionSpec>> = {
  key: {
    params: ['text', 'repeat'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, signal }) =>
      both(readKeySequence(input, 'key'), readRepeat(input), (chords, repeat) => ({
        label: `key ${String(input.text).trim()}${repeat > 1 ? ` ×${repeat}` : ''}`,
        run: async () => {
          for (let i = 0; i < repeat; i++) for (const chord of chords) await withKeysHeld(session, chord, signal, async () => undefined);
        },
      })),
  },
  hold_key: {
    params: ['text', 'duration'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, signal, toolVersion }) =>
      both(readKeySequence(input, 'hold_key'), readDuration(input, 'hold_key', maxDuration(toolVersion)), (chords, seconds) => ({
        label: `hold_key ${String(input.text).trim()} for ${seconds}s`,
        run: () => withKeysHeld(session, unique(chords.flat()), signal, () => pause(seconds * 1000, signal)),
      })),
  },
  type: {
    params: ['text'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, vault, signal }) =>
      map(readText(input, 'text', 'type'), (text) => ({
        // The label keeps the `{{path}}` names; only the keystrokes carry the values.
        label: `type ${quote(text)}`,
        run: async () => {
          const entered = enterText(vault, text);
          // A secret goes into fields marked first (read as the placeholder, drawn as discs),
          // each field that takes one of its characters.
          if (entered.secret) await typeSecretText(session, entered.text, shownAs(text), signal);
          else await session.typeText(entered.text, signal);
        },
      })),
  },
  cursor_position: {
    params: [],
    counted: false,
    wantsScreenshot: false,
    plan: (_input, { session, geometry }) => {
      const at = session.pointer();
      const shown = geometry.toDisplay(at.x, at.y);
      return { ok: true, value: { label: 'cursor_position', run: async () => ({ text: `X=${shown.x},Y=${shown.y}` }) } };
    },
  },
  mouse_move: {
    params: ['coordinate'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, geometry, signal }) =>
      map(readCoordinate(input, 'coordinate', geometry.display), (shown) => {
        const at = geometry.toViewport(shown.x, shown.y);
        return { label: `move ${pair(shown)}`, point: at, run: () => session.mouseMove(at.x, at.y, signal) };
      }),
  },
  left_click: clickAction('click', 'left', 1),
  right_click: clickAction('right click', 'right', 1),
  middle_click: clickAction('middle click', 'middle', 1),
  double_click: clickAction('double click', 'left', 2),
  triple_click: clickAction('triple click', 'left', 3),
  left_click_drag: {
    params: ['start_coordinate', 'coordinate'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, geometry, signal }) =>
      both(readCoordinate(input, 'start_coordinate', geometry.display), readCoordinate(input, 'coordinate', geometry.display), (from, to) => {
        const start = geometry.toViewport(from.x, from.y);
        const end = geometry.toViewport(to.x, to.y);
        return {
          label: `drag ${pair(from)} → ${pair(to)}`,
          point: end,
          run: async () => {
            await session.mouseMove(start.x, start.y, signal);
            await session.mouseDown('left', signal);
            try {
              for (let i = 1; i <= DRAG_STEPS; i++) {
                await session.mouseMove(
                  Math.round(start.x + ((end.x - start.x) * i) / DRAG_STEPS),
                  Math.round(start.y + ((end.y - start.y) * i) / DRAG_STEPS),
                  signal,
                );
              }
            } finally {
              // Never leave the button down: the next step would drag by accident.
              await release(signal, (bounded) => session.mouseUp('left', bounded));
            }
          },
        };
      }),
  },
  left_mouse_down: mouseButtonAction('mouse down', (s, signal) => s.mouseDown('left', signal)),
  left_mouse_up: mouseButtonAction('mouse up', (s, signal) => s.mouseUp('left', signal)),
  scroll: {
    params: ['coordinate', 'scroll_direction', 'scroll_amount', 'text', 'key'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, geometry, signal }) => {
      const scroll = readScroll(input);
      if (!scroll.ok) return scroll;
      const where = readOptionalCoordinate(input, geometry.display);
      if (!where.ok) return where;
      const held = readHeldKeys(input);
      if (!held.ok) return held;
      const target = resolvePoint(where.value, session, geometry);
      const { direction, amount } = scroll.value;
      const px = amount * SCROLL_PX_PER_CLICK;
      const [dx, dy] = { up: [0, -px], down: [0, px], left: [-px, 0], right: [px, 0] }[direction];
      const prefix = held.value.text ? `${held.value.text}+` : '';
      return {
        ok: true,
        value: {
          label: `${prefix}scroll ${direction} ${amount} at ${pair(target.shown)}`,
          point: target.at,
          run: () => withKeysHeld(session, held.value.keys, signal, () => session.wheel(target.at.x, target.at.y, dx!, dy!, signal)),
        },
      };
    },
  },
  wait: {
    params: ['duration'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { signal, toolVersion }) => map(readDuration(input, 'wait', maxDuration(toolVersion)), (seconds) => ({ label: `wait ${seconds}s`, run: () => pause(seconds * 1000, signal) })),
  },
  screenshot: {
    params: [],
    counted: false,
    wantsScreenshot: true,
    plan: () => ({ ok: true, value: { label: 'screenshot', run: async () => undefined } }),
  },
  zoom: {
    params: ['region'],
    counted: false,
    wantsScreenshot: false,
    versions: ZOOM_COMPUTER_TOOL_TYPES,
    plan: (input, { session, geometry, signal }) =>
      map(readRegion(input, geometry.display), (r) => {
        const { display, viewport } = geometry;
        const sx = viewport.width / display.width;
        const sy = viewport.height / display.height;
        const clip = { x: r.x0 * sx, y: r.y0 * sy, width: (r.x1 - r.x0) * sx, height: (r.y1 - r.y0) * sy };
        // Render the region at a higher scale so that it fills the display box, aspect kept.
        const scale = Math.min(display.width / clip.width, display.height / clip.height);
        const outputSize = { width: Math.max(1, Math.round(clip.width * scale)), height: Math.max(1, Math.round(clip.height * scale)) };
        return {
          label: `zoom [${r.x0}, ${r.y0}, ${r.x1}, ${r.y1}]`,
          run: async () => ({ image: await session.screenshot({ clip, outputSize, format: 'jpeg', quality: MODEL_IMAGE_QUALITY }, signal) }),
        };
      }),
  },
};

export const executeComputerAction: ExecuteComputerAction = async (input, context) => {
  if (!isRecord(input)) return rejected('unknown', false, 'the computer tool input must be an object with an "action" field');
  const name = input.action;
  if (typeof name !== 'string' || name.length === 0) return rejected('unknown', false, `"action" is required, got ${JSON.stringify(name) ?? 'nothing'}`);
  const spec = Object.hasOwn(ACTIONS, name) ? ACTIONS[name] : undefined;
  if (!spec || (spec.versions && !spec.versions.includes(context.toolVersion))) {
    const known = Object.entries(ACTIONS)
      .filter(([, s]) => !s.versions || s.versions.includes(context.toolVersion))
      .map(([n]) => n);
    return rejected(name, false, `unknown action "${name}" for ${context.toolVersion}; known actions: ${known.join(', ')}`);
  }
  const stray = unexpectedParams(input, spec.params, name);
  if (stray) return rejected(name, spec.counted, stray);
  const plan = spec.plan(input, context);
  if (!plan.ok) return rejected(name, spec.counted, plan.error);
  // Reads (screenshot, zoom, cursor_position) are not actions: no marker on the video.
  if (spec.counted) context.beforeRun?.({ label: plan.value.label, ...(plan.value.point ? { point: plan.value.point } : {}) });
  const result = (await plan.value.run()) ?? {};
  return {
    ok: true,
    action: name,
    counted: spec.counted,
    wantsScreenshot: spec.wantsScreenshot,
    label: plan.value.label,
    ...(plan.value.point ? { point: plan.value.point } : {}),
    ...(result.text !== undefined ? { text: result.text } : {}),
    ...(result.image ? { image: result.image } : {}),
  };
};

/** left/right/middle/double/triple click: optional coordinate, optional held keys (`text`). */
function clickAction(verb: string, button: MouseButton, clickCount: number): ActionSpec {
  return {
    params: CLICK_PARAMS,
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, geometry, signal }) => {
      const where = readOptionalCoordinate(input, geometry.display);
      if (!where.ok) return where;
      const held = readHeldKeys(input);
      if (!held.ok) return held;
      const target = resolvePoint(where.value, session, geometry);
      const prefix = held.value.text ? `${held.value.text}+` : '';
      return {
        ok: true,
        value: {
          label: `${prefix}${verb} ${pair(target.shown)}`,
          point: target.at,
          run: () => withKeysHeld(session, held.value.keys, signal, () => session.click(target.at.x, target.at.y, { button, clickCount }, signal)),
        },
      };
    },
  };
}

/** left_mouse_down / left_mouse_up: the button stays as left across steps; coordinate moves first. */
function mouseButtonAction(verb: string, press: (session: BrowserSession, signal: AbortSignal) => Promise<void>): ActionSpec {
  return {
    params: ['coordinate'],
    counted: true,
    wantsScreenshot: true,
    plan: (input, { session, geometry, signal }) =>
      map(readOptionalCoordinate(input, geometry.display), (shown) => {
        const target = resolvePoint(shown, session, geometry);
        return {
          label: `${verb} at ${pair(target.shown)}`,
          point: target.at,
          run: async () => {
            if (shown) await session.mouseMove(target.at.x, target.at.y, signal);
            await press(session, signal);
          },
        };
      }),
  };
}

/** A display point given by the model, or the pointer's position when none was given. */
function resolvePoint(shown: Point | undefined, session: BrowserSession, geometry: ActionContext['geometry']): { shown: Point; at: Point } {
  if (shown) return { shown, at: geometry.toViewport(shown.x, shown.y) };
  const at = session.pointer();
  return { shown: geometry.toDisplay(at.x, at.y), at };
}

/** Presses keys in order, runs fn, and releases them in reverse — always, even when fn fails. */
async function withKeysHeld(session: BrowserSession, keys: readonly string[], signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
  const pressed: string[] = [];
  let failure: { error: unknown } | undefined;
  try {
    for (const key of keys) {
      await session.keyDown(key, signal);
      pressed.push(key);
    }
    await fn();
  } catch (error) {
    failure = { error };
  }
  for (const key of pressed.reverse()) {
    try {
      await release(signal, (bounded) => session.keyUp(key, bounded));
    } catch (error) {
      // The first error is reported; a failed release after it is the same dead browser.
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}

/** How long a release (a key up, the drag's button up) may take once the run has stopped. */
const RELEASE_MS = 2_000;

/**
 * Releases what an action pressed. Once the run's signal has fired, the release still goes out
 * (under a signal of its own, bounded) but is not awaited: the run stops now, and the session
 * closes after it.
 */
async function release(signal: AbortSignal, up: (signal: AbortSignal) => Promise<void>): Promise<void> {
  if (!signal.aborted) return up(signal);
  void up(AbortSignal.timeout(RELEASE_MS)).catch(() => undefined);
}

/** Waits ms, or less when the execution is aborted (the loop checks the signal next). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  // The only rejection is the abort, which ends the pause early.
  return delay(ms, undefined, { signal }).catch(() => undefined);
}

function maxDuration(version: ComputerToolType): number | undefined {
  return version === COMPUTER_TOOLSET ? TOOLSET_MAX_DURATION_S : undefined;
}

function rejected(action: string, counted: boolean, error: string): ActionOutcome {
  return { ok: false, action, counted, error, label: `${action} (rejected)` };
}

function map<T>(check: Check<T>, fn: (value: T) => Plan): Check<Plan> {
  return check.ok ? { ok: true, value: fn(check.value) } : check;
}

function both<A, B>(a: Check<A>, b: Check<B>, fn: (a: A, b: B) => Plan): Check<Plan> {
  if (!a.ok) return a;
  if (!b.ok) return b;
  return { ok: true, value: fn(a.value, b.value) };
}

function unique(keys: readonly string[]): string[] {
  return [...new Set(keys)];
}

function pair(p: Point): string {
  return `(${p.x}, ${p.y})`;
}

/** A quoted, shortened rendering of typed text for labels. */
function quote(text: string): string {
  const shown = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return JSON.stringify(shown);
}
