/**
 * Where a key goes (docs/action-spaces.md#keyboard-pointer-and-time). Keys go to the focused
 * element; form_input leaves its field without the focus, as a person leaves it, so a `key
 * Return` right after it would reach nothing. When nothing has the focus, the element the model
 * last acted on by reference (in that tab) is given it back first; when there is none, the key
 * goes to the page itself. Either way the result says where it went: a key that reached nothing
 * never reads as done.
 */
import type { BrowserTab, ElementIdentity } from '../browser/types.js';

export interface KeyboardTarget {
  /** The sentence the result adds after the acknowledgment (`Pressed Return.`). */
  note: string;
  /** The element that had the focus, when one had it. */
  focused?: ElementIdentity;
  /** The element given the focus back, when it was. */
  refocused?: ElementIdentity;
}

export async function keyboardTarget(tab: BrowserTab, lastRef: string | undefined, signal: AbortSignal): Promise<KeyboardTarget> {
  const focused = await tab.focused(signal).catch(() => null);
  if (focused) return { note: `It went to ${describeElement(focused.identity)}.`, focused: focused.identity };
  if (lastRef) {
    const given = await tab.focus(lastRef, signal).catch(() => undefined);
    if (given?.ok) {
      return {
        note: `It went to ${describeElement(given.value)} (${lastRef}), the element you last acted on: nothing had the focus (form_input leaves a field as a person does), so it was given the focus back first.`,
        refocused: given.value,
      };
    }
  }
  return { note: 'No element has the focus: it went to the page itself. Click the field (or use form_input) to type into it.' };
}

/**
 * How a keyboard action is recorded for the run cache: the focus it typed into, or, when the
 * focus had to be given back, the element it went to as its target (a replay finds that element,
 * and the key gives it the focus the same way).
 */
export function keyedTo(into: KeyboardTarget): { focus: ElementIdentity | true } | { target: ElementIdentity } {
  return into.refocused ? { target: into.refocused } : { focus: into.focused ?? true };
}

/** An element as the model reads it: `textbox "Subject"`. */
function describeElement(identity: ElementIdentity): string {
  return `${identity.role}${identity.name ? ` ${JSON.stringify(identity.name)}` : ''}`;
}
