/**
 * Open dialogs, read first (docs/action-spaces.md#read_page): a dialog the page shows is what
 * the next action is about, and a modal one covers the page below it. A dialog read is open (a
 * closed one renders nothing); it is modal when it says so (`aria-modal`), when it was opened
 * as one (`<dialog>` by showModal), or when something other than it covers the page all around
 * it (the overlay of jQuery UI's and most libraries' modal dialogs).
 */
import { hitAt } from './hit.js';
import { role, visibility } from './semantics.js';

const DIALOG_ROLES = new Set(['dialog', 'alertdialog']);

export const isDialog = (r: string | null): boolean => r !== null && DIALOG_ROLES.has(r);

/** Whether an open dialog keeps the page below it from being used. */
export function isModal(el: Element): boolean {
  if (el.getAttribute('aria-modal') === 'true') return true;
  try {
    if (el.matches(':modal')) return true;
  } catch {
    // An engine without :modal: the overlay check below decides.
  }
  // Points of the viewport around the dialog: each must hit an element that is neither the
  // dialog nor the page itself, and that covers the whole viewport (an overlay).
  const box = el.getBoundingClientRect();
  const points = [[4, 4], [innerWidth - 5, 4], [4, innerHeight - 5], [innerWidth - 5, innerHeight - 5]].filter(
    ([x, y]) => x! < box.left || x! > box.right || y! < box.top || y! > box.bottom,
  );
  if (points.length === 0) return false;
  return points.every(([x, y]) => {
    const hit = hitAt(x!, y!);
    if (!hit || hit === document.documentElement || hit === document.body || el.contains(hit) || hit.contains(el)) return false;
    const r = hit.getBoundingClientRect();
    return r.left <= 0 && r.top <= 0 && r.right >= innerWidth && r.bottom >= innerHeight;
  });
}

/** The dialogs this document shows (outermost ones), modal ones first. */
export function openDialogs(): Element[] {
  const found = Array.from(document.querySelectorAll('dialog, [role=dialog], [role=alertdialog]')).filter(
    (el) => isDialog(role(el)) && visibility(el) === 'shown' && !el.closest('[aria-hidden=true], [inert]'),
  );
  const outermost = found.filter((el) => !found.some((other) => other !== el && other.contains(el)));
  const modal = outermost.filter(isModal);
  return [...modal, ...outermost.filter((el) => !modal.includes(el))];
}
