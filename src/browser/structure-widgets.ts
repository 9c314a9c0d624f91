/**
 * Part of the page structure script (structure-script.ts assembles it; same rules: source text,
 * no backticks): the widgets form_input fills the way a person does (widget-input.ts drives
 * them with the mouse and keyboard). What kind of widget an element is and what it holds now,
 * the options its pop-up shows, and the days of a pop-up calendar. See
 * docs/action-spaces.md#form_input-on-widgets.
 */
export const WIDGET_PARTS = `
  /** The native select a widget draws over (select2, tom-select, …): hidden, just before the widget or one of its parents. */
  function nativeBehind(el) {
    let node = el;
    for (let up = 0; node && up < 4; up++) {
      for (let prev = node.previousElementSibling; prev; prev = prev.previousElementSibling) {
        if (prev.localName === 'select' && visibility(prev) !== 'shown') return prev;
        if (visibility(prev) === 'shown') break;
      }
      node = node.parentElement || (node.getRootNode() && node.getRootNode().host) || null;
    }
    return null;
  }

  function checkedOf(el) {
    if (el.getAttribute('aria-checked') != null) return el.getAttribute('aria-checked') === 'true';
    if (el.getAttribute('aria-pressed') != null) return el.getAttribute('aria-pressed') === 'true';
    return !!el.checked;
  }

  /** The texts a choice widget holds now: its hidden select's chosen options, else what it shows. */
  function chosenOf(el) {
    const native = nativeBehind(el);
    if (native) return Array.from(native.selectedOptions).map((o) => squash(o.label || o.textContent)).filter(Boolean);
    if ((el.localName === 'input' || el.localName === 'textarea') && el.value) return [squash(el.value)];
    // The widget's box: its parent holds the chosen items beside the typing field (tom-select's items).
    const box = el.parentElement || el;
    const shown = textOf(box);
    return shown ? [shown] : [];
  }

  /**
   * What form_input can do with an element the plain setter refuses: 'choice' (a combobox or
   * listbox drawn by a script), 'toggle' (a switch or checkbox drawn as a button), 'date' (a
   * read-only field that opens a calendar), or 'none'.
   */
  function widgetOf(el) {
    const r = role(el) || el.localName;
    const native = el.localName === 'input' || el.localName === 'select' || el.localName === 'textarea';
    if ((r === 'switch' || r === 'checkbox' || r === 'menuitemcheckbox' || (r === 'button' && el.getAttribute('aria-pressed') != null)) && !(el.localName === 'input')) {
      return { kind: 'toggle', checked: checkedOf(el) };
    }
    if (r === 'combobox' || r === 'listbox' || (r === 'clickable' && el.getAttribute('aria-haspopup'))) {
      if (el.localName === 'select' || (el.localName === 'input' && el.hasAttribute('list'))) return { kind: 'none' };
      const behind = nativeBehind(el);
      const multiple = (behind && behind.multiple) || el.getAttribute('aria-multiselectable') === 'true'
        || byIds(el, 'aria-controls').some((l) => l.getAttribute('aria-multiselectable') === 'true');
      return { kind: 'choice', multiple: !!multiple, chosen: chosenOf(el), expanded: el.getAttribute('aria-expanded') === 'true' };
    }
    if (native && el.localName === 'input' && el.readOnly && !isDisabled(el)) return { kind: 'date', value: el.value };
    // A data grid's cell, edited in place: a click (or Enter) opens its editor.
    if ((r === 'gridcell' || (r === 'cell' && el.closest('[role=grid], [role=treegrid]'))) && !el.querySelector('input, select, textarea, [contenteditable]')) return { kind: 'cell', text: textOf(el) };
    return { kind: 'none', role: r };
  }

  /** Visible elements under root (shadow roots and slots followed) that pass keep. */
  function shownWhere(root, keep) {
    const out = [];
    const visit = (n) => {
      if (n.nodeType !== 1 && n.nodeType !== 11) return;
      if (n.nodeType === 1) {
        const vis = visibility(n);
        if (vis === 'gone') return;
        if (vis === 'shown' && keep(n)) out.push(n);
      }
      for (const c of children(n)) visit(c);
    };
    visit(root);
    return out;
  }

  /** The options a choice widget's pop-up shows now: in the list it controls, else anywhere on the page. */
  function popupOptions(el, state) {
    const isOption = (n) => role(n) === 'option' && n.localName !== 'option';
    const lists = byIds(el, 'aria-controls').concat(byIds(el, 'aria-owns'));
    let found = [];
    for (const list of lists) found = found.concat(shownWhere(list, isOption));
    if (found.length === 0) found = shownWhere(document.documentElement, isOption);
    return found.slice(0, 200).map((o) => ({ ref: refOf(o, state), text: textOf(o) || name(o, 'option'), selected: o.getAttribute('aria-selected') === 'true' }));
  }

  /** A day of a pop-up calendar: the date its label, title or data attribute names, as YYYY-MM-DD. */
  function dayOf(n) {
    const pad = (v) => String(v).padStart(2, '0');
    for (const text of [n.getAttribute('data-date'), n.getAttribute('aria-label'), n.getAttribute('title'), n.getAttribute('datetime')]) {
      if (!text || !/\\d/.test(text) || !/(19|20)\\d\\d/.test(text)) continue;
      const iso = /^(\\d{4})-(\\d{2})-(\\d{2})$/.exec(text.trim());
      if (iso) return iso[1] + '-' + iso[2] + '-' + iso[3];
      const at = new Date(text);
      if (!isNaN(at.getTime())) return at.getFullYear() + '-' + pad(at.getMonth() + 1) + '-' + pad(at.getDate());
    }
    return null;
  }

  /** The calendar the page shows: its days, and the controls that move to the previous and next month. */
  function calendar(state) {
    const days = shownWhere(document.documentElement, (n) => n.childElementCount <= 1 && dayOf(n) !== null && !n.matches('input, select, textarea, time'));
    const clickable = (n) => (role(n) === 'button' || role(n) === 'clickable' || getComputedStyle(n).cursor === 'pointer');
    const words = (n) => (String(n.className && n.className.baseVal !== undefined ? n.className.baseVal : n.className) + ' ' + (n.getAttribute('aria-label') || '') + ' ' + (n.getAttribute('title') || '')).toLowerCase();
    const near = days.length ? (days[0].closest('[role=dialog], [class*=calendar], [class*=picker], [class*=datepicker]') || document.documentElement) : document.documentElement;
    const prev = shownWhere(near, (n) => clickable(n) && /prev/.test(words(n)));
    const next = shownWhere(near, (n) => clickable(n) && /next/.test(words(n)));
    return {
      days: days.slice(0, 120).map((d) => ({ ref: refOf(d, state), date: dayOf(d) })),
      prev: prev.length ? refOf(prev[prev.length - 1], state) : null,
      next: next.length ? refOf(next[next.length - 1], state) : null,
    };
  }
`;
