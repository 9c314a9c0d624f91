// A person in the loop on the execution page (docs/human-in-the-loop.md): while the run waits,
// the question with its choices as buttons and a free answer (an approval: Approve and Deny,
// sent as a decision), and the live view takes the person's clicks, wheel and keys, sent to the
// worker in the order they were made.

import { api, errorBox, h } from './dom.js';

const KIND_HINT = {
  question: 'The agent has a question.',
  approval: 'The agent asks for your approval before it goes on.',
  takeover: 'The agent hands the browser to you: click and type in the live view, then press Done.',
};

export function createHumanPanel(id) {
  const el = h('section', { class: 'human', 'data-testid': 'human-panel', hidden: true });
  let shownFor;
  let frame;
  let waiting = false;
  // One request at a time, in order: a click must reach the page before the text typed after it.
  let queue = Promise.resolve();
  const status = h('p', { class: 'muted', 'data-testid': 'human-status' });

  const send = (path, body) => {
    const sent = queue.then(() => api('POST', `/api/executions/${encodeURIComponent(id)}/${path}`, body));
    queue = sent.catch(() => undefined);
    return sent;
  };

  /** Sends `{ answer }` for a question or a takeover, `{ decision }` for an approval. */
  const answer = async (body) => {
    for (const b of el.querySelectorAll('button, input')) b.disabled = true;
    try {
      await send('answer', body);
      status.textContent = 'Answer sent: the run goes on.';
    } catch (err) {
      status.replaceChildren(errorBox(err));
      for (const b of el.querySelectorAll('button, input')) b.disabled = false;
    }
  };

  const input = (body) => {
    if (!waiting) return;
    send('input', body).catch((err) => status.replaceChildren(errorBox(err)));
  };

  /** Where on the page a pointer event is, as fractions of the picture. */
  const at = (event) => {
    const box = frame.getBoundingClientRect();
    const clamp = (v) => Math.min(1, Math.max(0, v));
    return { x: clamp((event.clientX - box.left) / box.width), y: clamp((event.clientY - box.top) / box.height) };
  };

  // An approval is a choice, not a text: only these buttons grant or refuse it.
  const approvalForm = () => [
    h('div', { class: 'row' },
      h('button', { type: 'button', 'data-testid': 'human-approve', onclick: () => answer({ decision: 'approve' }) }, 'Approve'),
      h('button', { type: 'button', class: 'danger', 'data-testid': 'human-deny', onclick: () => answer({ decision: 'deny' }) }, 'Deny')),
  ];

  // A question or a takeover: the model's choices as buttons, and a free answer.
  const answerForm = (w) => {
    const choices = w.choices?.length ? w.choices : w.kind === 'takeover' ? ['done'] : [];
    const free = h('input', { name: 'answer', placeholder: 'Your answer', 'data-testid': 'human-answer', autocomplete: 'off' });
    return [
      choices.length ? h('div', { class: 'row' }, choices.map((c) => h('button', { type: 'button', 'data-testid': 'human-choice', onclick: () => answer({ answer: c }) }, c))) : null,
      h('form', {
        class: 'row human-free',
        onsubmit: (ev) => {
          ev.preventDefault();
          if (free.value.trim()) void answer({ answer: free.value.trim() });
        },
      }, free, h('button', { type: 'submit', 'data-testid': 'human-send' }, 'Send answer')),
    ];
  };

  return {
    el,
    /** The live view's picture: while the run waits it takes the person's input. */
    attach(img) {
      frame = img;
      img.tabIndex = 0;
      img.draggable = false;
      // The point is taken where the button went down, and focusing never scrolls: a picture
      // taller than the window scrolled into view on focus, and the click then landed lower on
      // the page than where the person pressed.
      let pressedAt: { x: number; y: number } | null = null;
      img.addEventListener('mousedown', (e) => {
        if (!waiting) return;
        e.preventDefault();
        pressedAt = at(e);
        img.focus({ preventScroll: true });
      });
      img.addEventListener('click', (e) => {
        if (!waiting) return;
        input({ kind: 'click', ...(pressedAt ?? at(e)), button: 'left' });
        pressedAt = null;
      });
      img.addEventListener('wheel', (e) => {
        if (!waiting) return;
        e.preventDefault();
        input({ kind: 'wheel', ...at(e), deltaX: Math.round(e.deltaX), deltaY: Math.round(e.deltaY) });
      }, { passive: false });
      img.addEventListener('keydown', (e) => {
        if (!waiting) return;
        e.preventDefault();
        if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) return input({ kind: 'text', text: e.key });
        if (['Control', 'Shift', 'Alt', 'Meta'].includes(e.key)) return;
        const mods = [e.ctrlKey && 'Control', e.altKey && 'Alt', e.metaKey && 'Meta', e.shiftKey && e.key.length > 1 && 'Shift'].filter(Boolean);
        input({ kind: 'key', key: [...mods, e.key].join('+') });
      });
      img.classList.toggle('interactive', waiting);
    },
    /** Shows or hides the question as the execution's status says. */
    update(e) {
      const w = e.status === 'waiting' ? e.waiting : null;
      waiting = Boolean(w);
      frame?.classList.toggle('interactive', waiting);
      if (!w) {
        el.hidden = true;
        shownFor = undefined;
        return;
      }
      if (shownFor === w.waitingAt) return;
      shownFor = w.waitingAt;
      status.textContent = w.timeoutAt ? `The run waits until ${new Date(w.timeoutAt).toLocaleString()}.` : '';
      el.replaceChildren(
        h('h2', {}, 'Waiting for you'),
        h('p', { class: 'muted' }, KIND_HINT[w.kind] ?? ''),
        h('p', { class: 'human-question', 'data-testid': 'human-question' }, w.question),
        ...(w.kind === 'approval' ? approvalForm() : answerForm(w)),
        status,
      );
      el.hidden = false;
    },
  };
}
