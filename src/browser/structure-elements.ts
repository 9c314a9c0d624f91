/**
 * Part of the page structure script (structure-script.ts assembles it; same rules: source text,
 * no backticks): what an element is to the agent. Its visibility, role, accessible name, value
 * and text, computed from what the page renders, and the shared limits and helpers.
 */
export const ELEMENT_SEMANTICS = `
  const NAME_MAX = 100;
  const VALUE_MAX = 200;
  const OPTIONS_MAX = 40;

  const INTERACTIVE = new Set(['link', 'button', 'textbox', 'searchbox', 'combobox', 'listbox', 'option', 'checkbox', 'radio',
    'switch', 'slider', 'spinbutton', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'treeitem', 'clickable']);
  // Roles whose name is their visible content: that text is not repeated as text lines below them.
  const NAME_FROM_CONTENT = new Set(['link', 'button', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'cell', 'gridcell', 'columnheader', 'rowheader', 'checkbox', 'radio', 'switch', 'clickable', 'tooltip']);
  // Roles that hold running text: reported with all their text, unless controls sit inside them.
  const TEXTUAL = new Set(['paragraph', 'listitem', 'cell', 'gridcell', 'columnheader', 'rowheader', 'term', 'definition', 'caption',
    'legend', 'code', 'blockquote', 'status', 'alert']);
  const TEXT_MAX = 1000;
  const CONTROLS = 'a[href], button, input:not([type=hidden]), select, textarea, [role], [tabindex], [contenteditable]';
  const STRUCTURED = CONTROLS + ', h1, h2, h3, h4, h5, h6, img[alt], table, ul, ol, dl, p, li, form, nav, main, iframe';
  // Containers that group content: reported (with a name when they have one) to give the tree its shape.
  const LANDMARKS = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'form', 'search',
    'dialog', 'alertdialog', 'group', 'list', 'table', 'row', 'grid', 'tablist', 'tabpanel', 'menu', 'menubar', 'tree',
    'radiogroup', 'toolbar', 'article', 'figure', 'img', 'heading', 'iframe', 'progressbar', 'meter', 'separator']);
  const TEXT_INPUTS = new Set(['text', 'email', 'tel', 'url', 'password', 'search', 'number', 'date', 'time', 'datetime-local',
    'month', 'week', 'color', '']);
  const SECTIONING = 'article, aside, main, nav, section';

  // The browser's own names (ax-names.ts fills this): element → { role, name, description }.
  const axInfo = new WeakMap();
  let axStale = true;
  new MutationObserver(() => { axStale = true; }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  /** Whether the document changed since the names were last given (and from now on: not). */
  function axDirty() { const was = axStale; axStale = false; return was; }
  function annotate(infos, elements) { elements.forEach((el, i) => { if (el && el.nodeType === 1) axInfo.set(el, infos[i]); }); }
  /**
   * Elements whose name or description the browser may give otherwise than name() does: named or
   * described by other elements, titled, holding visually-hidden text, custom elements (whose
   * role may come from their internals). The first max of them, in document order.
   */
  function axWanted(max) {
    const out = [];
    const hiddenText = (el) => {
      const all = el.querySelectorAll('*');
      for (let i = 0; i < all.length && i < 60; i++) if (all[i].textContent.trim() && visibility(all[i]) === 'gone' && all[i].getAttribute('aria-hidden') !== 'true' && getComputedStyle(all[i]).display !== 'none') return true;
      return false;
    };
    const visit = (node) => {
      if (out.length >= max || (node.nodeType !== 1 && node.nodeType !== 11)) return;
      if (node.nodeType === 1) {
        if (visibility(node) === 'gone') return;
        const custom = node.localName.includes('-') && !node.hasAttribute('role');
        if (custom || node.hasAttribute('aria-labelledby') || node.hasAttribute('aria-describedby') || node.hasAttribute('title')
          || (NAME_FROM_CONTENT.has(role(node)) && hiddenText(node))) out.push(node);
      }
      for (const c of children(node)) if (!(c.nodeType === 1 && c.ownerDocument !== document)) visit(c);
    };
    visit(document.documentElement);
    return out;
  }
  function axDescription(el) { const ax = axInfo.get(el); return ax ? ax.description : ''; }

  const squash = (s) => String(s == null ? '' : s).replace(/[\\s\\u00a0]+/g, ' ').trim();
  const cut = (s, max) => (s.length > max ? s.slice(0, max - 1) + '\\u2026' : s);
  const quote = (s) => '"' + s.replace(/\\\\/g, '\\\\\\\\').replace(/"/g, '\\\\"') + '"';

  /** The document of a same-origin frame; null for another origin's (its content is not read). */
  function frameDoc(el) {
    try { return el.contentDocument || null; } catch (e) { return null; }
  }

  /** Where a frame's document starts, in the top window's coordinates (0, 0 for the top document). */
  function frameOrigin(doc) {
    let x = 0;
    let y = 0;
    let win = doc.defaultView;
    while (win && win.frameElement) {
      const fe = win.frameElement;
      const r = fe.getBoundingClientRect();
      const s = getComputedStyle(fe);
      x += r.left + fe.clientLeft + (parseFloat(s.paddingLeft) || 0);
      y += r.top + fe.clientTop + (parseFloat(s.paddingTop) || 0);
      win = fe.ownerDocument.defaultView;
    }
    return { x, y };
  }

  /** An element's box in the top window's coordinates, wherever its frame is. */
  function rectOf(el) {
    const r = el.getBoundingClientRect();
    if (el.ownerDocument === document) return r;
    const o = frameOrigin(el.ownerDocument);
    return { left: r.left + o.x, right: r.right + o.x, top: r.top + o.y, bottom: r.bottom + o.y, width: r.width, height: r.height };
  }

  function children(node) {
    if (node.localName === 'iframe' || node.localName === 'frame') {
      const doc = frameDoc(node);
      return doc && doc.documentElement ? [doc.documentElement] : [];
    }
    if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
    if (node.localName === 'slot') {
      const assigned = node.assignedNodes({ flatten: true });
      return assigned.length ? assigned : Array.from(node.childNodes);
    }
    return Array.from(node.childNodes);
  }

  function deepActive() {
    let el = document.activeElement;
    for (let guard = 0; el && guard < 30; guard++) {
      if (el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
      else if ((el.localName === 'iframe' || el.localName === 'frame') && frameDoc(el) && frameDoc(el).activeElement) el = frameDoc(el).activeElement;
      else break;
    }
    return el;
  }

  /** 'gone' (the subtree renders nothing), 'hidden' (this element does not show, its children may), or 'shown'. */
  function visibility(el) {
    if (el.getAttribute('aria-hidden') === 'true' || el.hasAttribute('inert')) return 'gone';
    const style = getComputedStyle(el);
    if (style.display === 'none') return 'gone';
    if (style.display === 'contents') return 'hidden';
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return style.visibility !== 'hidden' && drawnByLabel(el) ? 'shown' : 'hidden';
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return 'hidden';
    // The "visually hidden" pattern (a 1px clipped box) is for screen readers, not for the eye:
    // nothing inside it is shown, so nothing inside it is read.
    const clipped = (r.width <= 2 && r.height <= 2 && style.overflow === 'hidden') || style.clip === 'rect(0px, 0px, 0px, 0px)' || style.clipPath === 'inset(50%)';
    if (clipped) return drawnByLabel(el) ? 'shown' : 'gone';
    return 'shown';
  }

  /**
   * A checkbox or radio made invisible (transparent, clipped) under a label that shows: the usual
   * custom-drawn control (a switch of a design system). It is reported; the label is what one
   * clicks (pointOf accepts a hit on it).
   */
  function drawnByLabel(el) {
    return el.localName === 'input' && (el.type === 'checkbox' || el.type === 'radio') && !!el.labels && Array.from(el.labels).some((l) => l.getBoundingClientRect().width > 2);
  }

  function inViewport(el) {
    const r = rectOf(el);
    return r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
  }

  function inputType(el) {
    return (el.getAttribute('type') || 'text').toLowerCase();
  }

  function role(el) {
    const explicit = squash(el.getAttribute('role')).split(' ')[0];
    if (explicit && explicit !== 'presentation' && explicit !== 'none' && explicit !== 'generic') return explicit;
    const tag = el.localName;
    switch (tag) {
      case 'a': case 'area': return el.hasAttribute('href') ? 'link' : null;
      case 'button': return 'button';
      case 'input': {
        const t = inputType(el);
        if (t === 'hidden') return null;
        if (t === 'button' || t === 'submit' || t === 'reset' || t === 'image') return 'button';
        if (t === 'checkbox') return el.getAttribute('switch') !== null ? 'switch' : 'checkbox';
        if (t === 'radio') return 'radio';
        if (t === 'range') return 'slider';
        if (t === 'number') return 'spinbutton';
        if (t === 'search') return el.hasAttribute('list') ? 'combobox' : 'searchbox';
        if (t === 'file') return 'button';
        return el.hasAttribute('list') ? 'combobox' : 'textbox';
      }
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'textarea': return 'textbox';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'img': return el.getAttribute('alt') === '' ? null : 'img';
      case 'svg': return el.getAttribute('aria-label') || el.querySelector('title') ? 'img' : null;
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'aside': return 'complementary';
      case 'header': return el.parentElement && el.parentElement.closest(SECTIONING) ? null : 'banner';
      case 'footer': return el.parentElement && el.parentElement.closest(SECTIONING) ? null : 'contentinfo';
      case 'section': return el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') ? 'region' : null;
      case 'form': return 'form';
      case 'search': return 'search';
      case 'article': return 'article';
      case 'figure': return 'figure';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'dl': return 'list';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'table': return 'table';
      case 'caption': return 'caption';
      case 'tr': return 'row';
      case 'th': return el.getAttribute('scope') === 'row' ? 'rowheader' : 'columnheader';
      case 'td': return 'cell';
      case 'dialog': return 'dialog';
      case 'details': return 'group';
      case 'summary': return 'button';
      case 'fieldset': return 'group';
      case 'legend': return 'legend';
      case 'p': return 'paragraph';
      case 'blockquote': return 'blockquote';
      case 'pre': case 'code': return 'code';
      case 'iframe': case 'frame': return 'iframe';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'hr': return 'separator';
    }
    if (el.isContentEditable && (el.parentElement === null || !el.parentElement.isContentEditable)) return 'textbox';
    // A role the browser gives that the markup does not show (a custom element's internals).
    const ax = axInfo.get(el);
    if (ax && INTERACTIVE.has(ax.role)) return ax.role;
    if (el.tabIndex >= 0 && el.hasAttribute('tabindex')) return 'clickable';
    // A plain element styled as clickable (cursor: pointer) whose parent is not: the usual
    // shape of a custom button built from a div.
    if (getComputedStyle(el).cursor === 'pointer' && el.parentElement && getComputedStyle(el.parentElement).cursor !== 'pointer') return 'clickable';
    return null;
  }

  /** Visible text of a subtree, images by their alt text; the control's own value left out. */
  function textOf(node, skip) {
    let out = '';
    const visit = (n) => {
      if (n === skip) return;
      if (n.nodeType === 3) { out += ' ' + n.data; return; }
      if (n.nodeType !== 1) return;
      if (visibility(n) === 'gone') return;
      const tag = n.localName;
      if (tag === 'img') { out += ' ' + (n.getAttribute('alt') || ''); return; }
      if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript') return;
      if (tag === 'input' || tag === 'select' || tag === 'textarea') return;
      for (const c of children(n)) visit(c);
    };
    visit(node);
    return squash(out);
  }

  function byIds(el, attr) {
    const list = squash(el.getAttribute(attr)).split(' ').filter(Boolean);
    const root = el.getRootNode();
    return list.map((id) => (root.getElementById ? root.getElementById(id) : document.getElementById(id))).filter(Boolean);
  }

  function name(el, r) {
    // The browser's name when it gives one; the rules below are for elements it left unnamed.
    const ax = axInfo.get(el);
    if (ax && ax.name) return cut(ax.name, NAME_MAX);
    const labelled = byIds(el, 'aria-labelledby');
    if (labelled.length) return cut(squash(labelled.map((l) => textOf(l)).join(' ')), NAME_MAX);
    const aria = squash(el.getAttribute('aria-label'));
    if (aria) return cut(aria, NAME_MAX);
    const tag = el.localName;
    if (tag === 'input' || tag === 'select' || tag === 'textarea') {
      const t = tag === 'input' ? inputType(el) : '';
      if (t === 'button' || t === 'submit' || t === 'reset') return cut(squash(el.value) || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : ''), NAME_MAX);
      if (t === 'image') return cut(squash(el.getAttribute('alt')) || 'Submit', NAME_MAX);
      const labels = el.labels ? Array.from(el.labels) : [];
      const fromLabels = squash(labels.map((l) => textOf(l, el)).join(' '));
      if (fromLabels) return cut(fromLabels, NAME_MAX);
      return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('placeholder')), NAME_MAX);
    }
    if (tag === 'img' || tag === 'area') return cut(squash(el.getAttribute('alt')) || squash(el.getAttribute('title')), NAME_MAX);
    if (tag === 'svg') { const t = el.querySelector('title'); return cut(squash(t ? t.textContent : ''), NAME_MAX); }
    if (tag === 'fieldset') { const legend = el.querySelector('legend'); if (legend) return cut(textOf(legend), NAME_MAX); }
    if (tag === 'table') { const caption = el.querySelector('caption'); if (caption) return cut(textOf(caption), NAME_MAX); }
    if (tag === 'iframe' || tag === 'frame') return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('name')), NAME_MAX);
    if (r === 'textbox') return cut(squash(el.getAttribute('title')) || squash(el.getAttribute('aria-placeholder')), NAME_MAX);
    if (r && NAME_FROM_CONTENT.has(r)) return cut(textOf(el) || squash(el.getAttribute('title')), NAME_MAX);
    return cut(squash(el.getAttribute('title')), NAME_MAX);
  }

  function isDisabled(el) {
    if (el.getAttribute('aria-disabled') === 'true') return true;
    return typeof el.matches === 'function' && el.matches(':disabled');
  }

  function valueOf(el, r) {
    const tag = el.localName;
    if (tag === 'select') {
      const chosen = Array.from(el.selectedOptions).map((o) => squash(o.label || o.textContent));
      return chosen.join(', ');
    }
    if (tag === 'input' && inputType(el) === 'password') return el.value ? '\\u2022\\u2022\\u2022\\u2022' : '';
    if (tag === 'input' || tag === 'textarea') return el.value;
    if (r === 'textbox' && el.isContentEditable) return textOf(el);
    const now = el.getAttribute('aria-valuenow');
    return now == null ? null : now;
  }
`;
