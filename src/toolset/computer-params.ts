/**
 * Readers for the parameters of Anthropic's computer tool (`computer_20250124`,
 * `computer_20251124`). Each returns a value or a reason the model can act on: a bad parameter
 * is answered with `is_error`, never guessed at.
 */
import type { Size } from '../browser/types.js';
import { parseChord, parseKeySequence } from './xdotool-keys.js';

export type Check<T> = { ok: true; value: T } | { ok: false; error: string };

export type ToolInput = Record<string, unknown>;

export interface Point {
  x: number;
  y: number;
}

export type ScrollDirection = 'up' | 'down' | 'left' | 'right';

/** Every parameter either tool version defines; `key` is the older spelling of click modifiers. */
export const KNOWN_PARAMS = ['coordinate', 'start_coordinate', 'text', 'key', 'scroll_direction', 'scroll_amount', 'duration', 'region', 'repeat'] as const;
export type ParamName = (typeof KNOWN_PARAMS)[number];

/** hold_key and wait longer than this are refused (the reference tool's limit; the toolset's is 300 s). */
export const MAX_DURATION_S = 100;
export const TOOLSET_MAX_DURATION_S = 300;
/** `repeat` of a key press, 1–100 (the computer toolset's documented bound). */
export const MAX_KEY_REPEAT = 100;

const ok = <T>(value: T): Check<T> => ({ ok: true, value });
const bad = <T>(error: string): Check<T> => ({ ok: false, error });

export function isRecord(value: unknown): value is ToolInput {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A parameter counts as absent when missing or null (models sometimes send null). */
export function present(input: ToolInput, name: string): boolean {
  return input[name] !== undefined && input[name] !== null;
}

/** Parameters this action does not take; a stray one is refused rather than ignored. */
export function unexpectedParams(input: ToolInput, accepted: readonly ParamName[], action: string): string | undefined {
  const stray = KNOWN_PARAMS.filter((p) => present(input, p) && !accepted.includes(p));
  if (stray.length === 0) return undefined;
  return `${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} not accepted for action ${action}`;
}

/** `[x, y]` in display pixels, inside the display. */
export function readCoordinate(input: ToolInput, name: 'coordinate' | 'start_coordinate', display: Size): Check<Point> {
  const raw = input[name];
  if (raw === undefined || raw === null) return bad(`${name} is required: [x, y] in pixels of the ${display.width}x${display.height} display`);
  if (!Array.isArray(raw) || raw.length !== 2 || !raw.every(isFiniteNumber)) {
    return bad(`${name} must be [x, y] with two numbers, got ${preview(raw)}`);
  }
  const [x, y] = raw as [number, number];
  if (x < 0 || y < 0 || x >= display.width || y >= display.height) {
    return bad(`${name} (${x}, ${y}) is outside the display: x must be 0–${display.width - 1} and y 0–${display.height - 1}`);
  }
  return ok({ x, y });
}

/** Like readCoordinate, but absent means "where the pointer is" (undefined). */
export function readOptionalCoordinate(input: ToolInput, display: Size): Check<Point | undefined> {
  if (!present(input, 'coordinate')) return ok(undefined);
  return readCoordinate(input, 'coordinate', display);
}

/** A required non-empty string parameter. */
export function readText(input: ToolInput, name: 'text', action: string): Check<string> {
  const raw = input[name];
  if (raw === undefined || raw === null) return bad(`text is required for action ${action}`);
  if (typeof raw !== 'string') return bad(`text must be a string, got ${preview(raw)}`);
  if (raw.length === 0) return bad(`text must not be empty for action ${action}`);
  return ok(raw);
}

/** The keys of `key` / `hold_key` text: chords separated by spaces. */
export function readKeySequence(input: ToolInput, action: string): Check<string[][]> {
  const text = readText(input, 'text', action);
  if (!text.ok) return text;
  const parsed = parseKeySequence(text.value);
  return parsed.ok ? ok(parsed.chords) : bad(parsed.reason);
}

/**
 * Keys held during a click or scroll: `text` (or the older `key`), one chord such as `shift`
 * or `ctrl+shift`. Empty when absent.
 */
export function readHeldKeys(input: ToolInput): Check<{ keys: string[]; text?: string }> {
  const name = present(input, 'text') ? 'text' : present(input, 'key') ? 'key' : undefined;
  if (!name) return ok({ keys: [] });
  const raw = input[name];
  if (typeof raw !== 'string') return bad(`${name} (keys to hold) must be a string such as "shift" or "ctrl", got ${preview(raw)}`);
  const parsed = parseChord(raw);
  return parsed.ok ? ok({ keys: parsed.keys, text: raw.trim() }) : bad(parsed.reason);
}

/** `repeat` of a key press: 1 when absent. */
export function readRepeat(input: ToolInput): Check<number> {
  if (!present(input, 'repeat')) return ok(1);
  const raw = input.repeat;
  if (!isFiniteNumber(raw) || !Number.isInteger(raw) || raw < 1 || raw > MAX_KEY_REPEAT) return bad(`repeat must be a whole number from 1 to ${MAX_KEY_REPEAT}, got ${preview(raw)}`);
  return ok(raw);
}

/** `duration` in seconds, 0 to `max` (MAX_DURATION_S unless the tool allows longer). */
export function readDuration(input: ToolInput, action: string, max = MAX_DURATION_S): Check<number> {
  const raw = input.duration;
  if (raw === undefined || raw === null) return bad(`duration (seconds) is required for action ${action}`);
  if (!isFiniteNumber(raw)) return bad(`duration must be a number of seconds, got ${preview(raw)}`);
  if (raw < 0) return bad(`duration must not be negative, got ${raw}`);
  if (raw > max) return bad(`duration ${raw} s is too long: at most ${max} s`);
  return ok(raw);
}

export function readScroll(input: ToolInput): Check<{ direction: ScrollDirection; amount: number }> {
  const direction = input.scroll_direction;
  if (direction === undefined || direction === null) return bad('scroll_direction is required: "up", "down", "left" or "right"');
  if (direction !== 'up' && direction !== 'down' && direction !== 'left' && direction !== 'right') {
    return bad(`scroll_direction must be "up", "down", "left" or "right", got ${preview(direction)}`);
  }
  const amount = input.scroll_amount;
  if (amount === undefined || amount === null) return bad('scroll_amount (number of wheel clicks) is required');
  if (!isFiniteNumber(amount) || !Number.isInteger(amount) || amount < 0) {
    return bad(`scroll_amount must be a non-negative integer number of wheel clicks, got ${preview(amount)}`);
  }
  return ok({ direction, amount });
}

/** `region: [x0, y0, x1, y1]` in display pixels: top-left and bottom-right corners. */
export function readRegion(input: ToolInput, display: Size): Check<{ x0: number; y0: number; x1: number; y1: number }> {
  const raw = input.region;
  if (raw === undefined || raw === null) return bad('region is required: [x0, y0, x1, y1] in display pixels');
  if (!Array.isArray(raw) || raw.length !== 4 || !raw.every(isFiniteNumber)) {
    return bad(`region must be [x0, y0, x1, y1] with four numbers, got ${preview(raw)}`);
  }
  const [x0, y0, x1, y1] = raw as [number, number, number, number];
  if (x0 < 0 || y0 < 0 || x1 > display.width || y1 > display.height) {
    return bad(`region [${raw.join(', ')}] is outside the ${display.width}x${display.height} display`);
  }
  if (x1 <= x0 || y1 <= y0) return bad(`region [${raw.join(', ')}] is empty: x1 must exceed x0 and y1 must exceed y0`);
  return ok({ x0, y0, x1, y1 });
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A short rendering of a bad value for an error message. */
function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
