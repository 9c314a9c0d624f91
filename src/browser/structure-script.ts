/**
 * What the page's structure looks like to the agent: the source of a script that runs in an
 * isolated world of each document (page-structure.ts puts it there), so the page's own scripts
 * can neither see nor change it. It reads what the page renders (the DOM as laid out, with
 * computed visibility), never the raw source, so hidden text does not reach the model.
 *
 * It gives each element it reports a reference (`ref_N`) and keeps a weak map from reference to
 * element for this document only; the numbers come from the worker (`next`), which keeps one
 * sequence per tab, so a reference is never reused in a tab, even across documents.
 *
 * Source text, like the settle probe: a function serialised from TypeScript would carry the
 * loader's helpers (`__name`) into a page that does not have them. No backticks below.
 */
export const STRUCTURE_KEY = '__executionWorkerStructure';

export const STRUCTURE_SCRIPT = `(() => {
  if (globalThis.${STRUCTURE_KEY}) return;
  const NAME_MAX = 100;
  const VALUE_MAX = 200;
  const OPTIONS_MAX = 40;
  const refs = new Map();
  const ids = new WeakMap();

  const INTERACTIVE = new Set(['link', 'button', 'textbox', 'searchbox', 'combobox', 'listbox', 'option', 'checkbox', 'radio',
    'switch', 'slider', 'spinbutton', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'treeitem', 'clickable']);
  // Roles whose name is their visible content: that text is not repeated as text lines below them.
  const NAME_FROM_CONTENT = new Set(['link', 'button', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'cell', 'columnheader', 'rowheader', 'checkbox', 'radio', 'switch', 'clickable', 'tooltip']);
  // Roles that hold running text: reported with all their text, unless controls sit inside them.
  const TEXTUAL = new Set(['paragraph', 'listitem', 'cell', 'columnheader', 'rowheader', 'term', 'definition', 'caption',
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

  const squash = (s) => String(s == null ? '' : s).replace(/[\\s\\u00a0]+/g, ' ').trim();
  const cut = (s, max) => (s.length > max ? s.slice(0, max - 1) + '\\u2026' : s);
  const quote = (s) => '"' + s.replace(/\\\\/g, '\\\\\\\\').replace(/"/g, '\\\\"') + '"';

  function children(node) {
    if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
    if (node.localName === 'slot') {
      const assigned = node.assignedNodes({ flatten: true });
      return assigned.length ? assigned : Array.from(node.childNodes);
    }
    return Array.from(node.childNodes);
  }

  function deepActive() {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  }

  /** 'gone' (the subtree renders nothing), 'hidden' (this element does not show, its children may), or 'shown'. */
  function visibility(el) {
    if (el.getAttribute('aria-hidden') === 'true' || el.hasAttribute('inert')) return 'gone';
    const style = getComputedStyle(el);
    if (style.display === 'none') return 'gone';
    if (style.display === 'contents') return 'hidden';
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return 'hidden';
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return 'hidden';
    // The "visually hidden" pattern (a 1px clipped box) is for screen readers, not for the eye:
    // nothing inside it is shown, so nothing inside it is read.
    if (r.width <= 2 && r.height <= 2 && style.overflow === 'hidden') return 'gone';
    return 'shown';
  }

  function inViewport(el) {
    const r = el.getBoundingClientRect();
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

  function refOf(el, state) {
    let ref = ids.get(el);
    if (ref && refs.get(ref) && refs.get(ref).deref() === el) return ref;
    ref = 'ref_' + state.next++;
    ids.set(el, ref);
    refs.set(ref, new WeakRef(el));
    return ref;
  }

  /** One line for an element: role "name" [ref_N] and what the agent needs of its state. */
  function line(el, r, state, nameText) {
    const parts = [r];
    if (nameText) parts.push(quote(nameText));
    parts.push('[' + refOf(el, state) + ']');
    const tag = el.localName;
    if (r === 'heading') { const level = Number(el.getAttribute('aria-level')) || Number(tag.slice(1)); if (level) parts.push('level=' + level); }
    if (tag === 'input') {
      const t = inputType(el);
      if (t === 'file') parts.push('(file input' + (el.accept ? ', accepts ' + el.accept : '') + (el.multiple ? ', multiple' : '') + ')');
      else if (t !== 'text' && t !== 'checkbox' && t !== 'radio' && t !== 'submit' && t !== 'button') parts.push('type=' + t);
    }
    if (tag === 'textarea') parts.push('multiline');
    if (r === 'checkbox' || r === 'radio' || r === 'switch' || el.hasAttribute('aria-checked')) {
      const checked = el.getAttribute('aria-checked') != null ? el.getAttribute('aria-checked') === 'true' : !!el.checked;
      parts.push(checked ? 'checked' : 'unchecked');
    }
    if (r === 'option' && (el.selected || el.getAttribute('aria-selected') === 'true')) parts.push('selected');
    if (el.getAttribute('aria-selected') === 'true' && r !== 'option') parts.push('selected');
    if (r === 'textbox' || r === 'searchbox' || r === 'combobox' || r === 'listbox' || r === 'slider' || r === 'spinbutton' || tag === 'input') {
      const v = valueOf(el, r);
      if (v != null && v !== '' && !(tag === 'input' && ['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'image'].includes(inputType(el)))) parts.push('value=' + quote(cut(squash(v), VALUE_MAX)));
      const ph = squash(el.getAttribute('placeholder'));
      if (ph && ph !== nameText && (v == null || v === '')) parts.push('placeholder=' + quote(cut(ph, NAME_MAX)));
    }
    if (r === 'link') { const href = el.getAttribute('href'); if (href && !/^javascript:/i.test(href)) parts.push('href=' + quote(cut(href, 120))); }
    if (el.getAttribute('aria-expanded')) parts.push(el.getAttribute('aria-expanded') === 'true' ? 'expanded' : 'collapsed');
    if (tag === 'details') parts.push(el.open ? 'expanded' : 'collapsed');
    if (el.required || el.getAttribute('aria-required') === 'true') parts.push('required');
    if (el.readOnly || el.getAttribute('aria-readonly') === 'true') parts.push('readonly');
    if (isDisabled(el)) parts.push('disabled');
    if (el.getAttribute('aria-invalid') === 'true' || (el.validity && el.willValidate && !el.validity.valid && el.value)) parts.push('invalid');
    if (el === state.focused) parts.push('focused');
    return parts.join(' ');
  }

  /**
   * read_page. filter: undefined (visible elements in the viewport), 'interactive' (interactive
   * elements in the viewport, flat) or 'all' (also those outside the viewport). The text grows
   * until maxChars; what did not fit is counted.
   */
  function readPage(opts) {
    const state = { next: opts.next, focused: deepActive() };
    const filter = opts.filter || 'visible';
    const maxDepth = Math.max(1, opts.depth || 15);
    const lines = [];
    let used = 0;
    let omitted = 0;
    let deeper = 0;
    const push = (text) => {
      if (used + text.length + 1 > opts.maxChars) { omitted++; return; }
      lines.push(text);
      used += text.length + 1;
    };
    const inView = (el) => filter === 'all' || opts.wholePage || inViewport(el);

    const pad = (depth) => '  '.repeat(filter === 'interactive' ? 0 : depth);
    const visit = (node, depth, parentTextual) => {
      if (node.nodeType === 3) {
        if (filter === 'interactive' || parentTextual) return;
        const t = squash(node.data);
        const host = node.parentElement;
        if (t && host && inView(host) && visibility(host) === 'shown') push(pad(depth) + 'text ' + quote(cut(t, TEXT_MAX)));
        return;
      }
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      if (node.nodeType === 1) {
        const tag = node.localName;
        if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript' || tag === 'head') return;
        const vis = visibility(node);
        if (vis === 'gone') return;
        // A label whose control is on the page names that control: its text would only repeat.
        if (tag === 'label' && node.control) { for (const c of children(node)) visit(c, depth, true); return; }
        const r = vis === 'shown' ? role(node) : null;
        let report = false;
        if (r && inView(node)) {
          if (filter === 'interactive') report = INTERACTIVE.has(r);
          else report = INTERACTIVE.has(r) || LANDMARKS.has(r) || TEXTUAL.has(r) || NAME_FROM_CONTENT.has(r);
        }
        if (report) {
          if (depth >= maxDepth) { deeper++; return; }
          let n;
          let textual;
          if (TEXTUAL.has(r)) {
            const plain = !node.querySelector(CONTROLS);
            n = plain ? cut(textOf(node), TEXT_MAX) : '';
            textual = plain;
          } else {
            n = name(node, r);
            textual = NAME_FROM_CONTENT.has(r) && !!n;
          }
          push(pad(depth) + line(node, r, state, n));
          if (tag === 'select') {
            const options = Array.from(node.options);
            options.slice(0, OPTIONS_MAX).forEach((o) => {
              const label = squash(o.label || o.textContent);
              push((filter === 'interactive' ? '  ' : pad(depth + 1)) + 'option ' + quote(cut(label, NAME_MAX)) + (o.value !== label ? ' value=' + quote(cut(o.value, NAME_MAX)) : '') + (o.selected ? ' selected' : '') + (o.disabled ? ' disabled' : ''));
            });
            if (options.length > OPTIONS_MAX) push((filter === 'interactive' ? '  ' : pad(depth + 1)) + '(' + (options.length - OPTIONS_MAX) + ' more options)');
            return;
          }
          if (tag === 'iframe' || tag === 'frame') return;
          for (const c of children(node)) visit(c, depth + 1, parentTextual || textual);
          return;
        }
        // Inline text with nothing reportable inside (a div of words and <b>s): one text line, not a word per line.
        if (vis === 'shown' && filter !== 'interactive' && !parentTextual && inView(node) && !node.shadowRoot
            && Array.from(node.childNodes).some((c) => c.nodeType === 3 && c.data.trim()) && !node.querySelector(STRUCTURED)) {
          const t = textOf(node);
          if (t) push(pad(depth) + 'text ' + quote(cut(t, TEXT_MAX)));
          return;
        }
      }
      for (const c of children(node)) visit(c, depth, parentTextual);
    };

    let root = document.body || document.documentElement;
    if (opts.ref) {
      const el = lookup(opts.ref);
      if (!el) return { ok: false, error: 'stale' };
      root = el;
      const r = role(el);
      if (r) {
        push(line(el, r, state, name(el, r)));
        for (const c of children(el)) visit(c, 1, NAME_FROM_CONTENT.has(r));
      } else visit(el, 0, false);
    } else if (root) visit(root, 0, false);
    return { ok: true, lines, omitted, deeper, next: state.next };
  }

  function lookup(ref) {
    const weak = refs.get(ref);
    const el = weak && weak.deref();
    if (!el || !el.isConnected) return null;
    return el;
  }

  /** Everything find() and locate() compare: role, name and the words around an element. */
  function candidates() {
    const out = [];
    const walk = (node) => {
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      if (node.nodeType === 1) {
        const tag = node.localName;
        if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'head') return;
        const vis = visibility(node);
        if (vis === 'gone') return;
        const r = vis === 'shown' ? role(node) : null;
        if (r && (INTERACTIVE.has(r) || LANDMARKS.has(r) || TEXTUAL.has(r))) {
          out.push({ el: node, role: r, name: name(node, r) });
        }
      }
      for (const c of children(node)) walk(c);
    };
    walk(document.documentElement);
    return out;
  }

  /** Words that describe an element beyond its name: placeholder, value, attributes, the heading or legend it sits under. */
  function context(el) {
    const words = [el.getAttribute('placeholder'), el.getAttribute('title'), el.getAttribute('name'), el.id,
      el.getAttribute('data-testid'), el.localName === 'input' ? inputType(el) : el.localName];
    const group = el.closest('fieldset, form, section, [role=dialog], dialog, nav, header, footer');
    if (group) {
      const legend = group.querySelector('legend, h1, h2, h3, h4, [role=heading]');
      if (legend) words.push(textOf(legend));
      words.push(group.getAttribute('aria-label'));
    }
    return squash(words.filter(Boolean).join(' '));
  }

  let lastFound = [];
  /** find(): every candidate with what the worker ranks it by; the elements stay here for linesFor(). */
  function findCandidates(limit) {
    const list = candidates().slice(0, limit);
    lastFound = list.map((c) => c.el);
    return list.map((c, i) => ({ i, role: c.role, name: c.name, context: context(c.el), inView: inViewport(c.el) }));
  }

  function linesFor(indices, next) {
    const state = { next, focused: deepActive() };
    const lines = [];
    for (const i of indices) {
      const el = lastFound[i];
      if (!el || !el.isConnected) continue;
      const r = role(el) || el.localName;
      lines.push(line(el, r, state, TEXTUAL.has(r) ? cut(textOf(el), NAME_MAX * 2) : name(el, r)));
    }
    lastFound = [];
    return { lines, next: state.next };
  }

  /** The page's visible text, the main content first when the page marks one. */
  function pageText(maxChars) {
    const main = document.querySelector('main, [role=main], article');
    const body = document.body || document.documentElement;
    const readable = (el) => (el && typeof el.innerText === 'string' ? el.innerText : textOf(el)).replace(/[ \\t]+/g, ' ').replace(/\\n{3,}/g, '\\n\\n').trim();
    let text = main ? readable(main) : readable(body);
    if (main) {
      const rest = readable(body);
      const mainText = text;
      if (rest.length > mainText.length) text = mainText + '\\n\\n---\\n' + rest.replace(mainText, '').trim();
    }
    const cutAt = text.length > maxChars;
    return { text: cutAt ? text.slice(0, maxChars) : text, total: text.length, cut: cutAt };
  }

  /** Where to click an element: scrolled into view, a point that reaches it (not a cover over it). */
  function pointOf(el) {
    if (visibility(el) === 'gone') return { ok: false, error: 'hidden' };
    let r = el.getBoundingClientRect();
    const fully = r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
    if (!fully) { el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); r = el.getBoundingClientRect(); }
    if (r.width < 1 || r.height < 1) return { ok: false, error: 'hidden' };
    const spots = [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75], [0.1, 0.5]];
    let cover = null;
    for (const [fx, fy] of spots) {
      const x = Math.round(r.left + r.width * fx);
      const y = Math.round(r.top + r.height * fy);
      if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
      const hit = hitAt(x, y);
      if (hit && (hit === el || el.contains(hit) || (hit.localName === 'label' && hit.control === el) || (el.shadowRoot && el.shadowRoot.contains(hit)))) return { ok: true, x, y };
      if (hit && !cover) cover = hit;
    }
    if (cover) { const cr = role(cover); return { ok: false, error: 'covered', by: (cr || cover.localName) + (name(cover, cr) ? ' ' + quote(name(cover, cr)) : '') }; }
    return { ok: false, error: 'offscreen' };
  }

  function hitAt(x, y) {
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  }

  /** The element under a viewport point: the nearest one with a role the agent would target. */
  function elementAt(x, y) {
    let el = hitAt(x, y);
    while (el) {
      const r = visibility(el) === 'shown' ? role(el) : null;
      if (r && (INTERACTIVE.has(r) || r === 'heading' || r === 'img' || r === 'cell' || r === 'listitem' || r === 'paragraph')) return el;
      el = el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
    }
    return null;
  }

  /** What identifies an element across page loads: role and name first, attributes and position to break ties. */
  function identity(el) {
    const r = role(el) || el.localName;
    return {
      role: r,
      name: name(el, r),
      tag: el.localName,
      type: el.localName === 'input' ? inputType(el) : undefined,
      id: el.id && !/\\d{3,}|[:]/.test(el.id) ? el.id : undefined,
      nameAttr: el.getAttribute('name') || undefined,
      testId: el.getAttribute('data-testid') || el.getAttribute('data-test') || undefined,
      href: el.localName === 'a' ? el.getAttribute('href') || undefined : undefined,
      path: pathOf(el),
    };
  }

  function pathOf(el) {
    const steps = [];
    let node = el;
    while (node && node.nodeType === 1 && node !== document.documentElement && steps.length < 12) {
      const tag = node.localName;
      const parent = node.parentElement;
      if (!parent) break;
      const same = Array.from(parent.children).filter((c) => c.localName === tag);
      steps.unshift(same.length > 1 ? tag + ':nth-of-type(' + (same.indexOf(node) + 1) + ')' : tag);
      node = parent;
    }
    return steps.join('>');
  }

  /** The one element matching an identity: same role and name; ties broken by attributes, then position. */
  function locate(want, next) {
    const norm = (s) => squash(s).toLowerCase();
    const matches = candidates().filter((c) => c.role === want.role && norm(c.name) === norm(want.name) && (want.type === undefined || want.type === (c.el.localName === 'input' ? inputType(c.el) : undefined)));
    if (matches.length === 0) return { ok: false, error: 'missing' };
    const score = (c) => {
      const id = identity(c.el);
      return (want.testId && id.testId === want.testId ? 8 : 0) + (want.id && id.id === want.id ? 4 : 0) + (want.nameAttr && id.nameAttr === want.nameAttr ? 4 : 0) + (want.href && id.href === want.href ? 2 : 0) + (id.path === want.path ? 1 : 0);
    };
    const scored = matches.map((c) => ({ c, s: score(c) })).sort((a, b) => b.s - a.s);
    if (scored.length > 1 && scored[0].s === scored[1].s) return { ok: false, error: 'ambiguous', count: scored.length };
    const el = scored[0].c.el;
    const state = { next, focused: deepActive() };
    return { ok: true, ref: refOf(el, state), next: state.next, enabled: !isDisabled(el), inView: inViewport(el) };
  }

  /** Sets a form element's value as the user would leave it, with the events a page listens for. */
  function setValue(el, value) {
    const tag = el.localName;
    const fire = (type) => el.dispatchEvent(new Event(type, { bubbles: true, composed: true }));
    if (isDisabled(el)) return { ok: false, error: 'disabled' };
    if (tag === 'select') {
      const want = squash(String(value));
      const options = Array.from(el.options);
      const pick = options.find((o) => o.value === String(value)) || options.find((o) => squash(o.label || o.textContent).toLowerCase() === want.toLowerCase());
      if (!pick) return { ok: false, error: 'no-option', options: options.slice(0, 20).map((o) => squash(o.label || o.textContent)) };
      if (pick.disabled) return { ok: false, error: 'option-disabled' };
      el.focus();
      options.forEach((o) => { if (!el.multiple || o === pick) o.selected = o === pick; });
      fire('input'); fire('change');
      return { ok: true, shown: squash(pick.label || pick.textContent) };
    }
    if (tag === 'input' && (inputType(el) === 'checkbox' || inputType(el) === 'radio')) {
      const want = value === true || value === 'true' || value === 1 || value === 'on' || value === 'checked';
      if (!want && value !== false && value !== 'false' && value !== 0 && value !== 'off' && value !== 'unchecked') return { ok: false, error: 'not-boolean' };
      if (el.checked === want) return { ok: true, shown: want ? 'checked' : 'unchecked' };
      if (!want && inputType(el) === 'radio') return { ok: false, error: 'radio-clear' };
      el.click();
      if (el.checked !== want) return { ok: false, error: 'refused' };
      return { ok: true, shown: want ? 'checked' : 'unchecked' };
    }
    if (tag === 'input' && inputType(el) === 'file') return { ok: false, error: 'file' };
    if (tag === 'input' || tag === 'textarea') {
      if (el.readOnly) return { ok: false, error: 'readonly' };
      const text = String(value);
      el.focus();
      const proto = tag === 'input' ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, text);
      if (text !== '' && el.value === '') return { ok: false, error: 'format', type: inputType(el) };
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertReplacementText', data: text }));
      fire('change');
      return { ok: true };
    }
    if (el.isContentEditable) {
      el.focus();
      const range = document.createRange();
      range.selectNodeContents(el);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      if (!document.execCommand('insertText', false, String(value))) { el.textContent = String(value); fire('input'); }
      return { ok: true };
    }
    return { ok: false, error: 'not-a-field', role: role(el) || tag };
  }

  function focused(next) {
    const el = deepActive();
    if (!el || el === document.body || el === document.documentElement) return null;
    return { identity: identity(el), editable: el.isContentEditable || el.localName === 'textarea' || (el.localName === 'input' && TEXT_INPUTS.has(inputType(el))) };
  }

  /**
   * Draws a field's text as discs, like a password field, so a secret typed into it never shows
   * in a screenshot, the video or the live view (the value itself is unchanged). Password fields
   * already hide theirs. Returns whether an element was masked.
   */
  function hideText(el) {
    if (!el || el === document.body || el === document.documentElement) return false;
    const editable = el.isContentEditable || el.localName === 'textarea' || el.localName === 'input';
    if (!editable || (el.localName === 'input' && inputType(el) === 'password')) return false;
    el.style.setProperty('-webkit-text-security', 'disc', 'important');
    return true;
  }

  /** Where a value shows on the page: the nearest element with a role around each text that holds it. */
  function findText(value, limit) {
    const out = [];
    const seen = new Set();
    const add = (el, text) => {
      if (!el || seen.has(el) || out.length >= limit) return;
      seen.add(el);
      out.push({ identity: identity(el), text });
    };
    const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node && out.length < limit; node = walker.nextNode()) {
      if (!node.data.includes(value)) continue;
      let el = node.parentElement;
      while (el && el.parentElement && !role(el)) el = el.parentElement;
      if (!el || visibility(el) === 'gone') continue;
      const text = textOf(el);
      if (text.includes(value)) add(el, text);
    }
    for (const input of Array.from(document.querySelectorAll('input, textarea, output'))) {
      if (out.length >= limit) break;
      const v = input.localName === 'output' ? input.textContent : input.value;
      if (v && String(v).includes(value) && !(input.localName === 'input' && inputType(input) === 'password')) add(input, String(v));
    }
    return out;
  }

  /** The text of the element an identity names by its place (test id, id, path), whatever it now says. */
  function readText(want) {
    const byRole = (el) => el && (role(el) || el.localName) === want.role;
    let el = null;
    if (want.testId) el = document.querySelector('[data-testid="' + CSS.escape(want.testId) + '"], [data-test="' + CSS.escape(want.testId) + '"]');
    if (!byRole(el) && want.id) el = document.getElementById(want.id);
    if (!byRole(el) && want.path) { try { el = document.querySelector(want.path.split('>').map((s) => s).join(' > ')); } catch (e) { el = null; } }
    if (!byRole(el) || visibility(el) === 'gone') return null;
    if (el.localName === 'input' || el.localName === 'textarea') return inputType(el) === 'password' ? null : el.value;
    return textOf(el);
  }

  Object.defineProperty(globalThis, '${STRUCTURE_KEY}', {
    enumerable: false,
    value: {
      readPage,
      findCandidates,
      linesFor,
      pageText,
      lookup,
      refOf: (el, next) => { const state = { next }; const ref = refOf(el, state); return { ref, next: state.next }; },
      point: (ref) => { const el = lookup(ref); return el ? pointOf(el) : { ok: false, error: 'stale' }; },
      identify: (ref) => { const el = lookup(ref); return el ? identity(el) : null; },
      identifyAt: (x, y) => { const el = elementAt(x, y); return el ? identity(el) : null; },
      locate,
      setValue: (ref, value) => { const el = lookup(ref); return el ? setValue(el, value) : { ok: false, error: 'stale' }; },
      scrollTo: (ref) => { const el = lookup(ref); if (!el) return { ok: false, error: 'stale' }; el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' }); return { ok: true }; },
      focused,
      hideText: (ref) => hideText(ref === null ? deepActive() : lookup(ref)),
      // A short-lived attribute that lets the page's own world find the element (file uploads).
      mark: (ref, name, value) => { const el = lookup(ref); if (!el) return false; if (value === null) el.removeAttribute(name); else el.setAttribute(name, value); return true; },
      findText,
      readText,
      describe: (ref) => { const el = lookup(ref); if (!el) return null; const r = role(el); return { role: r || el.localName, name: name(el, r), tag: el.localName, type: el.localName === 'input' ? inputType(el) : undefined }; },
    },
  });
})();`;
