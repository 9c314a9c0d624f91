/**
 * What the run cache keeps of a computer-use action, read just before it runs: the page's URL,
 * the element under the action's point (for a click, a drag's end, a scroll), or the element
 * with the keyboard focus (for typing and keys).
 */
import type { BrowserSession, ElementIdentity } from '../browser/types.js';
import type { DisplayGeometry } from './computer-types.js';
import type { ActionTrace } from './types.js';
import type { ToolUseBlock } from '../contract/recording.js';

const FOCUS_ACTIONS = new Set(['type', 'key', 'hold_key']);
const READS = new Set(['screenshot', 'zoom', 'cursor_position']);

export async function traceOf(session: BrowserSession, call: ToolUseBlock, geometry: DisplayGeometry, signal: AbortSignal): Promise<ActionTrace | undefined> {
  const input = call.input && typeof call.input === 'object' && !Array.isArray(call.input) ? { ...(call.input as Record<string, unknown>) } : undefined;
  if (!input) return undefined;
  // The toolset's calls name the action by the member; the earlier tool's by `action`.
  const action = call.toolset_name ? call.name : String(input.action ?? '');
  if (READS.has(action)) return undefined;
  const tab = session.tab();
  if (!tab) return undefined;
  const trace: ActionTrace = { tool: call.name, ...(call.toolset_name ? { toolsetName: call.toolset_name } : {}), input, url: session.currentUrl() };
  try {
    const coordinate = input.coordinate;
    if (Array.isArray(coordinate) && coordinate.length === 2 && coordinate.every((n) => typeof n === 'number')) {
      const at = geometry.toViewport(coordinate[0] as number, coordinate[1] as number);
      const target = await tab.identifyAt(at, signal);
      if (target) trace.target = target;
    } else if (FOCUS_ACTIONS.has(action)) {
      const focus: { identity: ElementIdentity } | null = await tab.focused(signal);
      if (focus) trace.focus = focus.identity;
    }
  } catch (error) {
    if (signal.aborted) throw error;
    // A page that cannot be read right now leaves a trace without an element: the cache will
    // not replay that step, and the model takes over there.
  }
  return trace;
}
