/**
 * Part of the page structure script (structure-script.ts assembles it; same rules: source text,
 * no backticks): references and reading. `ref_N` numbers for elements (a weak map, this
 * document only), read_page's tree, find's candidates and the page's text.
 */
export const PAGE_READS = `
  const refs = new Map();
  const ids = new WeakMap();

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
    const description = squash(axDescription(el));
    if (description && description !== nameText && description !== squash(el.getAttribute('placeholder'))) parts.push('description=' + quote(cut(description, NAME_MAX)));
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
    // Frames of another site whose content this document cannot read: where their lines go (the worker reads them).
    const frames = [];
    const spot = (node, depth) => { if (otherSite(node)) frames.push({ ref: refOf(node, state), at: lines.length, depth }); };
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
          spot(node, depth + 1);
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
        if (vis === 'shown' && inView(node)) spot(node, depth);
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
        spot(el, 1);
        for (const c of children(el)) visit(c, 1, NAME_FROM_CONTENT.has(r));
      } else visit(el, 0, false);
    } else if (root) visit(root, 0, false);
    return { ok: true, lines, omitted, deeper, frames, next: state.next };
  }

  /** A frame whose document is of another site (the worker reads its content in that document). */
  function otherSite(el) {
    return (el.localName === 'iframe' || el.localName === 'frame') && !frameDoc(el);
  }

  /** References of the shown frames of another site, wherever they are in this document (find reads into them). */
  function frameHosts(next) {
    const state = { next };
    const refs = [];
    // Styles are computed for frames only (a long page is walked on every find): checkVisibility
    // sees a hidden ancestor, and an aria-hidden or inert one is looked up.
    const walk = (node) => {
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      if (node.nodeType === 1 && otherSite(node)) {
        if (visibility(node) === 'shown' && !node.closest('[aria-hidden=true], [inert]')) refs.push(refOf(node, state));
        return;
      }
      for (const c of children(node)) walk(c);
    };
    walk(document.documentElement);
    return { refs, next: state.next };
  }

  /**
   * Where a frame's content starts in this document's viewport (the frame brought into view
   * first), for a point inside it to be clicked from the top page.
   */
  function frameBox(el) {
    if (visibility(el) !== 'shown') return { ok: false, error: 'hidden' };
    let r = rectOf(el);
    if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) { el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' }); r = rectOf(el); }
    const s = getComputedStyle(el);
    return { ok: true, x: r.left + el.clientLeft + (parseFloat(s.paddingLeft) || 0), y: r.top + el.clientTop + (parseFloat(s.paddingTop) || 0) };
  }

  function lookup(ref) {
    const weak = refs.get(ref);
    const el = weak && weak.deref();
    if (!el || !el.isConnected) return null;
    return el;
  }

  /** Roles of the regions an element sits in, named in find's results. */
  const REGIONS = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'form', 'search', 'dialog', 'alertdialog', 'toolbar', 'tabpanel', 'group', 'menu']);

  /**
   * Everything find() and locate() compare: role, name, and where each element is (the heading
   * it comes under and the region it sits in, both tracked in the one walk of the document).
   */
  function candidates() {
    const out = [];
    let heading = '';
    const walk = (node, region) => {
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      let inside = region;
      if (node.nodeType === 1) {
        const tag = node.localName;
        if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'head') return;
        const vis = visibility(node);
        if (vis === 'gone') return;
        const r = vis === 'shown' ? role(node) : null;
        if (r && (INTERACTIVE.has(r) || LANDMARKS.has(r) || TEXTUAL.has(r))) {
          const n = name(node, r);
          out.push({ el: node, role: r, name: n, heading, region });
          if (r === 'heading') heading = n;
        }
        if (r && REGIONS.has(r)) inside = { role: r, name: name(node, r) };
      }
      for (const c of children(node)) walk(c, inside);
    };
    walk(document.documentElement, null);
    return out;
  }

  /** Words that describe an element beyond its name: placeholder, value, attributes, the heading or legend it sits under. */
  function context(el) {
    const words = [el.getAttribute('placeholder'), el.getAttribute('title'), el.getAttribute('name'), el.id,
      el.getAttribute('data-testid'), el.localName === 'input' ? inputType(el) : el.localName, el.localName === 'button' ? el.type : ''];
    const group = el.closest('fieldset, form, section, [role=dialog], dialog, nav, header, footer');
    if (group) {
      const legend = group.querySelector('legend, h1, h2, h3, h4, [role=heading]');
      if (legend) words.push(textOf(legend));
      words.push(group.getAttribute('aria-label'));
    }
    return squash(words.filter(Boolean).join(' '));
  }

  /** The headers of the table cell an element is in: its column's and its row's (when not the element's own cell). */
  function headersOf(el) {
    const cell = el.closest('td, th, [role=cell], [role=gridcell]');
    if (!cell) return {};
    const row = cell.parentElement;
    const table = cell.closest('table, [role=table], [role=grid], [role=treegrid]');
    if (!row || !table) return {};
    const cells = Array.from(row.children);
    const index = cells.indexOf(cell);
    const headRow = table.querySelector('thead tr, tr:has(> th), [role=row]:has(> [role=columnheader])');
    const head = headRow && headRow !== row ? headRow.children[index] : null;
    const first = cells.find((c) => c.localName === 'th' || c.getAttribute('role') === 'rowheader') || cells[0];
    return {
      column: head ? cut(textOf(head), NAME_MAX) : '',
      row: first && first !== cell ? cut(textOf(first), NAME_MAX) : '',
    };
  }

  /** A field with no label of its own: the text just before it (in it parent, or its parents' up to three levels). */
  function nearbyLabel(el, r) {
    if (!['textbox', 'searchbox', 'combobox', 'listbox', 'spinbutton', 'checkbox', 'radio', 'switch', 'slider'].includes(r)) return '';
    if (el.labels && el.labels.length) return '';
    // A part of a combobox (select2's rendered choice) is named by the combobox, not by the label beside it.
    const box = el.parentElement && el.parentElement.closest('[role=combobox]');
    if (box) return '';
    let node = el;
    for (let up = 0; node && up < 4; up++) {
      for (let prev = node.previousElementSibling; prev; prev = prev.previousElementSibling) {
        if (visibility(prev) === 'gone') continue;
        const t = textOf(prev);
        if (t) return cut(t, 60);
      }
      node = node.parentElement || (node.getRootNode() && node.getRootNode().host) || null;
    }
    return '';
  }

  /** find()'s view of where an element is, for ranking and for its result line. */
  function whereOf(c) {
    const h = headersOf(c.el);
    const href = c.role === 'link' ? c.el.getAttribute('href') || '' : '';
    return {
      description: squash(axDescription(c.el)),
      label: nearbyLabel(c.el, c.role),
      heading: c.heading !== c.name ? c.heading : '',
      region: c.region ? squash(c.region.role + ' ' + c.region.name) : '',
      regionRole: c.region ? c.region.role : '',
      regionName: c.region ? c.region.name : '',
      column: h.column || '',
      row: h.row || '',
      href: /^javascript:/i.test(href) ? '' : href,
    };
  }

  /** The words a result line adds so that elements of the same name tell apart. */
  function whereLine(w) {
    const parts = [];
    if (w.label) parts.push('label ' + quote(w.label));
    if (w.row) parts.push('row ' + quote(w.row));
    if (w.column) parts.push('column ' + quote(w.column));
    if (w.heading) parts.push('under ' + quote(cut(w.heading, 60)));
    if (w.regionRole) parts.push('in ' + w.regionRole + (w.regionName ? ' ' + quote(cut(w.regionName, 60)) : ''));
    return parts.length ? ' (' + parts.join('; ') + ')' : '';
  }

  let lastFound = [];
  /** find(): every candidate with what the worker ranks it by; the elements stay here for linesFor(). */
  function findCandidates(limit) {
    const list = candidates().slice(0, limit);
    lastFound = list;
    return list.map((c, i) => Object.assign({ i, role: c.role, name: c.name, context: context(c.el), inView: inViewport(c.el) }, whereOf(c)));
  }

  function linesFor(indices, next) {
    const state = { next, focused: deepActive() };
    const lines = [];
    for (const i of indices) {
      const c = lastFound[i];
      if (!c || !c.el.isConnected) continue;
      const el = c.el;
      const r = role(el) || el.localName;
      lines.push(line(el, r, state, TEXTUAL.has(r) ? cut(textOf(el), NAME_MAX * 2) : name(el, r)) + whereLine(whereOf(c)));
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
`;
