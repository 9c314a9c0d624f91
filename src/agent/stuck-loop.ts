/**
 * Stuck loops (docs/action-spaces.md#stuck-loops): a model that makes the same action again and
 * again on a page that does not change is not getting anywhere, and each turn costs a request.
 * The third identical action in a row that leaves the page as it was is answered with
 * `is_error: true` saying so; the fifth ends the run with `agent_stuck`.
 *
 * "The same action" is the same tool, member or action and input (keys in any order), pointer
 * coordinates within SAME_TARGET_PX of the previous action's counting as the same: a click 1 px
 * off aims at the same target, and a model that alternates the two is just as stuck. "The page
 * did not change" is the same tab, URL and page digest after the action as after the one before
 * (BrowserTab.contentDigest: the text, field values, scrolling, focus and canvas pixels of the
 * page and of every frame), read once after each action that counts. Waits and reads do not
 * count: they neither add to a streak nor break one, so a model may look or wait between its
 * tries. A page that changes under each identical click (a
 * counter, a carousel) is never stuck; nor is an action whose page cannot be read (navigating,
 * closed): it breaks the streak.
 */
import type { BrowserSession } from '../browser/types.js';
import { errorFromSignal } from '../contract/errors.js';
import type { ActionReport } from '../toolset/types.js';
import type { ToolUseBlock } from '../contract/recording.js';

/** The repeat that is answered with an error, and the one that ends the run. */
export const STUCK_WARN_AT = 3;
export const STUCK_STOP_AT = 5;
/**
 * Pointer coordinates at most this far apart (px, on each axis) aim at one target: below the
 * size of anything a person can click, so two different controls are never taken for one.
 */
export const SAME_TARGET_PX = 3;

/** Actions that wait for the page rather than act on it. */
const WAITING_ACTIONS = new Set(['wait']);

export type RepeatVerdict = { kind: 'go' } | { kind: 'warn' | 'stop'; repeats: number };

export interface RepeatWatch {
  /** After an action ran (or was refused): whether it is one more identical try on an unchanged page. */
  after(call: ToolUseBlock, report: Pick<ActionReport, 'action' | 'counted'>, signal: AbortSignal): Promise<RepeatVerdict>;
}

export function createRepeatWatch(session: Pick<BrowserSession, 'tab' | 'currentUrl'>): RepeatWatch {
  let last: { action: ActionShape; page: string | undefined } | undefined;
  let repeats = 0;
  return {
    async after(call, report, signal) {
      if (!report.counted || WAITING_ACTIONS.has(report.action)) return { kind: 'go' };
      const action = shapeOf([call.toolset_name ?? call.name, report.action, call.input]);
      const page = await pageNow(session, signal);
      repeats = last !== undefined && page !== undefined && sameAction(last.action, action) && last.page === page ? repeats + 1 : 1;
      last = { action, page };
      if (repeats >= STUCK_STOP_AT) return { kind: 'stop', repeats };
      if (repeats >= STUCK_WARN_AT) return { kind: 'warn', repeats };
      return { kind: 'go' };
    },
  };
}

/** What the model is told with the third and fourth identical action. */
export function stuckText(repeats: number): string {
  return `The page did not change: this is the ${ordinal(repeats)} time in a row that this exact action left the page as it was (same URL, same content). Doing it again will not help. Look at the page (a screenshot or a read) and try another way: another element, scrolling, a different input, or a navigation; if the task cannot be done, call \`finish\` with status "failed" and the reason. At the ${ordinal(STUCK_STOP_AT)} identical action on an unchanged page the run is stopped.`;
}

/** The tab, its URL and its digest; undefined when the page cannot be read now (it counts as changed). */
async function pageNow(session: Pick<BrowserSession, 'tab' | 'currentUrl'>, signal: AbortSignal): Promise<string | undefined> {
  const tab = session.tab();
  if (!tab) return undefined;
  try {
    return `${tab.id}\n${session.currentUrl()}\n${await tab.contentDigest(signal)}`;
  } catch {
    // Nothing is lost: a page that cannot be read (navigating, closed) is not a page shown to be
    // unchanged, so the streak breaks, as on a change. The run's own abort is not ours to swallow.
    if (signal.aborted) throw errorFromSignal(signal);
    return undefined;
  }
}

/** An action as JSON with object keys sorted (`{a, b}` and `{b, a}` are one input) and its pointer coordinates apart. */
interface ActionShape {
  key: string;
  points: number[];
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Coordinates are the computer tool's `coordinate` and `start_coordinate` ([x, y]) and the
 * browser toolset's coordinate targets ({type: "coordinate", x, y}); each is taken out of the key
 * (in the order JSON visits them, the same for two inputs of one shape) so that it can be
 * compared with a tolerance.
 */
export function shapeOf(value: unknown): ActionShape {
  const points: number[] = [];
  const key = JSON.stringify(value, (name, v: unknown) => {
    if ((name === 'coordinate' || name === 'start_coordinate') && Array.isArray(v) && v.length === 2 && v.every(isNumber)) {
      points.push(v[0] as number, v[1] as number);
      return '(point)';
    }
    if (!isRecord(v)) return v;
    const entries = Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (v.type === 'coordinate' && isNumber(v.x) && isNumber(v.y)) {
      points.push(v.x, v.y);
      return Object.fromEntries(entries.map(([k, x]) => [k, k === 'x' || k === 'y' ? '(point)' : x]));
    }
    return Object.fromEntries(entries);
  }) ?? 'undefined';
  return { key, points };
}

export function sameAction(a: ActionShape, b: ActionShape): boolean {
  return a.key === b.key && a.points.length === b.points.length && a.points.every((p, i) => Math.abs(p - b.points[i]!) <= SAME_TARGET_PX);
}

function ordinal(n: number): string {
  return ['first', 'second', 'third', 'fourth', 'fifth'][n - 1] ?? `${n}th`;
}
