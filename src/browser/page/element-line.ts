/** One element as the agent reads it: `role "name" [ref_N]` and what it needs of its state. */
import { axDescription } from './ax-store.js';
import { editable, inputType, isInput, isTextArea } from './dom.js';
import { refOf, type RefState } from './refs.js';
import { isDialog, isModal } from './dialogs.js';
import { byIds, editableRegion, isDisabled, valueOf } from './semantics.js';
import { cut, multiline, NAME_MAX, quote, squash, VALUE_MAX } from './text.js';

/** Input types whose value is not shown as `value=` (it is their state, their label or a file name). */
const NO_VALUE_SHOWN = ['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'image'];
/** Roles that show their value. */
const VALUED = new Set(['textbox', 'searchbox', 'combobox', 'listbox', 'slider', 'spinbutton']);

export function line(el: Element, r: string, state: RefState, nameText: string): string {
  const parts = [r];
  if (nameText) parts.push(quote(nameText));
  parts.push('[' + refOf(el, state) + ']');
  const tag = el.localName;
  const field = el as Partial<HTMLInputElement>;
  if (r === 'heading') {
    const level = Number(el.getAttribute('aria-level')) || Number(tag.slice(1));
    if (level) parts.push('level=' + level);
  }
  if (isInput(el)) {
    const t = inputType(el);
    if (t === 'file') parts.push('(file input' + (el.accept ? ', accepts ' + el.accept : '') + (el.multiple ? ', multiple' : '') + ')');
    else if (t !== 'text' && t !== 'checkbox' && t !== 'radio' && t !== 'submit' && t !== 'button') parts.push('type=' + t);
  }
  if (isDialog(r)) parts.push(isModal(el) ? '(open, modal)' : '(open)');
  if (isTextArea(el)) parts.push('multiline');
  if (r === 'checkbox' || r === 'radio' || r === 'switch' || el.hasAttribute('aria-checked')) {
    const checked = el.getAttribute('aria-checked') != null ? el.getAttribute('aria-checked') === 'true' : !!field.checked;
    parts.push(checked ? 'checked' : 'unchecked');
  }
  if (r === 'option' && ((el as Partial<HTMLOptionElement>).selected || el.getAttribute('aria-selected') === 'true')) parts.push('selected');
  if (el.getAttribute('aria-selected') === 'true' && r !== 'option') parts.push('selected');
  if (VALUED.has(r) || isInput(el) || editableRegion(el)) {
    const v = valueOf(el);
    // A textarea's or an editor's value keeps its line breaks; any other is one line.
    const lines = isTextArea(el) || editable(el);
    // An invisible character alone (the caret holder of an empty editor) is an empty value.
    const shown = v == null ? '' : lines ? multiline(v) : squash(v);
    if (shown !== '' && !(isInput(el) && NO_VALUE_SHOWN.includes(inputType(el)))) parts.push('value=' + quote(cut(shown, VALUE_MAX)));
    const ph = squash(el.getAttribute('placeholder') || el.getAttribute('aria-placeholder') || el.getAttribute('data-placeholder'));
    if (ph && ph !== nameText && shown === '') parts.push('placeholder=' + quote(cut(ph, NAME_MAX)));
  }
  const description = squash(axDescription(el));
  // A dialog described by its own content (jQuery UI's) would only repeat what is read below it.
  const ownContent = isDialog(r) && byIds(el, 'aria-describedby').every((d) => el.contains(d));
  if (description && !ownContent && description !== nameText && description !== squash(el.getAttribute('placeholder'))) parts.push('description=' + quote(cut(description, NAME_MAX)));
  if (r === 'link') {
    const href = el.getAttribute('href');
    if (href && !/^javascript:/i.test(href)) parts.push('href=' + quote(cut(href, 120)));
  }
  if (el.getAttribute('aria-pressed') === 'true' || el.getAttribute('aria-pressed') === 'false') parts.push(el.getAttribute('aria-pressed') === 'true' ? 'pressed' : 'not-pressed');
  if (el.getAttribute('aria-expanded')) parts.push(el.getAttribute('aria-expanded') === 'true' ? 'expanded' : 'collapsed');
  if (tag === 'details') parts.push((el as HTMLDetailsElement).open ? 'expanded' : 'collapsed');
  if (field.required || el.getAttribute('aria-required') === 'true') parts.push('required');
  if (field.readOnly || el.getAttribute('aria-readonly') === 'true') parts.push('readonly');
  if (isDisabled(el)) parts.push('disabled');
  if (el.getAttribute('aria-invalid') === 'true' || (field.validity && field.willValidate && !field.validity.valid && field.value)) parts.push('invalid');
  if (el === state.focused) parts.push('focused');
  return parts.join(' ');
}
