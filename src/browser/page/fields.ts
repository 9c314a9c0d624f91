/**
 * Form fields as a person leaves them: setting a value with the events a page listens for, the
 * focused field, and a field's text drawn as discs while it holds a secret.
 */
import { deepActive, editable, inputType, isInput, isSelect, isTextArea } from './dom.js';
import { identity } from './targets.js';
import type { ElementIdentity, Refusal } from './shapes.js';
import { isDisabled, role, TEXT_INPUTS } from './semantics.js';
import { squash } from './text.js';
import { markSecret } from './secret-fields.js';

export type SetValueResult = { ok: true; shown?: string } | Refusal;

/** Sets a form element's value as the user would leave it, with the events a page listens for. */
export function setValue(el: Element, value: string | number | boolean): SetValueResult {
  const fire = (type: string) => el.dispatchEvent(new Event(type, { bubbles: true, composed: true }));
  if (isDisabled(el)) return { ok: false, error: 'disabled' };
  if (isSelect(el)) {
    const want = squash(String(value));
    const options = Array.from(el.options);
    const pick = options.find((o) => o.value === String(value)) || options.find((o) => squash(o.label || o.textContent).toLowerCase() === want.toLowerCase());
    if (!pick) return { ok: false, error: 'no-option', options: options.slice(0, 20).map((o) => squash(o.label || o.textContent)) };
    if (pick.disabled) return { ok: false, error: 'option-disabled' };
    el.focus();
    options.forEach((o) => {
      if (!el.multiple || o === pick) o.selected = o === pick;
    });
    fire('input');
    fire('change');
    return { ok: true, shown: squash(pick.label || pick.textContent) };
  }
  if (isInput(el) && (inputType(el) === 'checkbox' || inputType(el) === 'radio')) {
    const want = value === true || value === 'true' || value === 1 || value === 'on' || value === 'checked';
    if (!want && value !== false && value !== 'false' && value !== 0 && value !== 'off' && value !== 'unchecked') return { ok: false, error: 'not-boolean' };
    if (el.checked === want) return { ok: true, shown: want ? 'checked' : 'unchecked' };
    if (!want && inputType(el) === 'radio') return { ok: false, error: 'radio-clear' };
    el.click();
    if (el.checked !== want) return { ok: false, error: 'refused' };
    return { ok: true, shown: want ? 'checked' : 'unchecked' };
  }
  if (isInput(el) && inputType(el) === 'file') return { ok: false, error: 'file' };
  if (isInput(el) || isTextArea(el)) {
    if (el.readOnly) return { ok: false, error: 'readonly' };
    const text = String(value);
    el.focus();
    // The prototype's setter, not the element's own: a framework that wraps `value` on the
    // element (React) then sees the change as a person's.
    const proto = isInput(el) ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value')?.set?.call(el, text);
    if (text !== '' && el.value === '') return { ok: false, error: 'format', type: inputType(el) };
    el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertReplacementText', data: text }));
    fire('change');
    // Left as a person leaves a field: pages that read a typed value when the field loses focus
    // (a date picker's own format, a masked input) take it now.
    el.blur();
    return { ok: true };
  }
  if (editable(el)) {
    (el as HTMLElement).focus();
    const doc = el.ownerDocument;
    const range = doc.createRange();
    range.selectNodeContents(el);
    const selection = doc.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    if (!doc.execCommand('insertText', false, String(value))) {
      el.textContent = String(value);
      fire('input');
    }
    return { ok: true };
  }
  return { ok: false, error: 'not-a-field', role: role(el) || el.localName };
}

/**
 * Gives an element the keyboard focus (a key the agent presses after form_input, which leaves
 * its field as a person does, goes back to that field). Its identity when it took the focus;
 * null when it cannot take it (not focusable, disabled).
 */
export function focus(el: Element): ElementIdentity | null {
  (el as HTMLElement).focus({ preventScroll: true });
  return deepActive() === el ? identity(el) : null;
}

/** The focused element's identity, and whether it takes typed text; null when nothing has the focus. */
export function focused(): { identity: ElementIdentity; editable: boolean } | null {
  // A frame of another site (this script runs in it too) holds the focus only when its document has it.
  if (window.top !== window && !document.hasFocus()) return null;
  const el = deepActive();
  if (!el || el === document.body || el === document.documentElement) return null;
  return { identity: identity(el), editable: editable(el) || isTextArea(el) || (isInput(el) && TEXT_INPUTS.has(inputType(el))) };
}

/**
 * Marks a field as holding a secret before one goes into it: it reads as `shownAs` in every read
 * from now on (secret-fields.ts), and its text is drawn as discs, like a password field, so the
 * secret never shows in a screenshot, the video or the live view (the value itself is
 * unchanged). Password fields already hide theirs. Returns whether an element was marked.
 */
export function hideText(el: Element | null, shownAs: string): boolean {
  if (!el || el === document.body || el === document.documentElement) return false;
  const canType = editable(el) || isTextArea(el) || isInput(el);
  if (!canType) return false;
  markSecret(el, shownAs);
  if (isInput(el) && inputType(el) === 'password') return true;
  (el as HTMLElement).style.setProperty('-webkit-text-security', 'disc', 'important');
  return true;
}
