/**
 * Part of the page structure script (structure-script.ts assembles it; same rules: source text,
 * no backticks): the elements the agent acts on. Where to click one, which one is under a point,
 * its identity across page loads (the run cache's) and how to find it again, setting form values,
 * the focused field, and where a value shows on the page.
 */
export const ACTION_TARGETS = `
  /** Where to click an element: scrolled into view, a point that reaches it (not a cover over it). */
  function pointOf(el, scrolled) {
    if (visibility(el) === 'gone') return { ok: false, error: 'hidden' };
    let r = rectOf(el);
    const fully = r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
    if (!fully && !scrolled) { el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); r = rectOf(el); scrolled = true; }
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
    // In view of the window but clipped by a scrolling box (a pop-up list's lower options): scrolled within it, once.
    if (!scrolled) { el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' }); return pointOf(el, true); }
    if (cover) { const cr = role(cover); return { ok: false, error: 'covered', by: (cr || cover.localName) + (name(cover, cr) ? ' ' + quote(name(cover, cr)) : '') }; }
    return { ok: false, error: 'offscreen' };
  }

  /** The element at a point of the top window: into open shadow roots and same-origin frames. */
  function hitAt(x, y) {
    let hit = document.elementFromPoint(x, y);
    let origin = { x: 0, y: 0 };
    for (let guard = 0; hit && guard < 30; guard++) {
      if (hit.shadowRoot) {
        const inner = hit.shadowRoot.elementFromPoint(x - origin.x, y - origin.y);
        if (inner && inner !== hit) { hit = inner; continue; }
      }
      const doc = hit.localName === 'iframe' || hit.localName === 'frame' ? frameDoc(hit) : null;
      if (doc) {
        origin = frameOrigin(doc);
        const inner = doc.elementFromPoint(x - origin.x, y - origin.y);
        if (inner) { hit = inner; continue; }
      }
      break;
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
      // Left as a person leaves a field: pages that read a typed value when the field loses focus
      // (a date picker's own format, a masked input) take it now.
      el.blur();
      return { ok: true };
    }
    if (el.isContentEditable) {
      el.focus();
      const doc = el.ownerDocument;
      const range = doc.createRange();
      range.selectNodeContents(el);
      const selection = doc.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      if (!doc.execCommand('insertText', false, String(value))) { el.textContent = String(value); fire('input'); }
      return { ok: true };
    }
    return { ok: false, error: 'not-a-field', role: role(el) || tag };
  }

  function focused(next) {
    // A frame of another site (this script runs in it too) holds the focus only when its document has it.
    if (window.top !== window && !document.hasFocus()) return null;
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
`;
