// A person in the loop on the execution page (docs/human-in-the-loop.md): while the run waits,
// the question with its choices as buttons and a free answer (an approval: Approve and Deny,
// sent as a decision), and the live view takes the person's clicks, wheel and keys, sent to the
// worker in the order they were made.

import type { ImgHTMLAttributes } from 'preact';
import { useRef, useState } from 'preact/hooks';
import type { ExecutionRow } from '../../contract/executions.js';
import { ErrorBox, api, formText } from './dom.js';

type Waiting = NonNullable<ExecutionRow['waiting']>;

const KIND_HINT: Record<string, string> = {
  question: 'The agent has a question.',
  approval: 'The agent asks for your approval before it goes on.',
  takeover: 'The agent hands the browser to you: click and type in the live view, then press Done.',
};

/** Sends the person's answers and input, one request at a time, in order: a click must reach the page before the text typed after it. */
export function createHumanSender(id: string) {
  let queue: Promise<unknown> = Promise.resolve();
  return (path: 'answer' | 'input', body: Record<string, unknown>) => {
    const sent = queue.then(() => api('POST', `/api/executions/${encodeURIComponent(id)}/${path}`, body));
    queue = sent.catch(() => undefined);
    return sent;
  };
}
export type HumanSender = ReturnType<typeof createHumanSender>;

/** The question while the run waits for a person; nothing otherwise. */
export function HumanPanel({ e, send, inputError }: { e: ExecutionRow; send: HumanSender; inputError: unknown }) {
  const w = e.status === 'waiting' ? e.waiting ?? null : null;
  if (!w) return <section class="human" data-testid="human-panel" hidden />;
  // A new question (another waitingAt) starts afresh.
  return <Question key={w.waitingAt} w={w} send={send} inputError={inputError} />;
}

function Question({ w, send, inputError }: { w: Waiting; send: HumanSender; inputError: unknown }) {
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState<{ text: string } | { error: unknown }>({ text: w.timeoutAt ? `The run waits until ${new Date(w.timeoutAt).toLocaleString()}.` : '' });
  /** Sends `{ answer }` for a question or a takeover, `{ decision }` for an approval. */
  const answer = async (body: Record<string, unknown>) => {
    setBusy(true);
    try {
      await send('answer', body);
      setStatus({ text: 'Answer sent: the run goes on.' });
    } catch (err) {
      setStatus({ error: err });
      setBusy(false);
    }
  };
  const choices = w.choices?.length ? w.choices : w.kind === 'takeover' ? ['done'] : [];
  const free = (ev: SubmitEvent) => {
    ev.preventDefault();
    const text = formText(new FormData(ev.currentTarget as HTMLFormElement), 'answer').trim();
    if (text) void answer({ answer: text });
  };
  return (
    <section class="human" data-testid="human-panel">
      <h2>Waiting for you</h2>
      <p class="muted">{KIND_HINT[w.kind] ?? ''}</p>
      <p class="human-question" data-testid="human-question">{w.question}</p>
      {w.kind === 'approval' ? (
        // An approval is a choice, not a text: only these buttons grant or refuse it.
        <div class="row">
          <button type="button" data-testid="human-approve" disabled={busy} onClick={() => void answer({ decision: 'approve' })}>Approve</button>
          <button type="button" class="danger" data-testid="human-deny" disabled={busy} onClick={() => void answer({ decision: 'deny' })}>Deny</button>
        </div>
      ) : (
        <>
          {choices.length ? <div class="row">{choices.map((c) => <button type="button" data-testid="human-choice" disabled={busy} onClick={() => void answer({ answer: c })}>{c}</button>)}</div> : null}
          <form class="row human-free" onSubmit={free}>
            <input name="answer" placeholder="Your answer" aria-label="Your answer" data-testid="human-answer" autocomplete="off" disabled={busy} />
            <button type="submit" data-testid="human-send" disabled={busy}>Send answer</button>
          </form>
        </>
      )}
      <p class="muted" data-testid="human-status">{'error' in status ? <ErrorBox error={status.error} /> : inputError !== undefined ? <ErrorBox error={inputError} /> : status.text}</p>
    </section>
  );
}

/** The live view's picture's handlers: while the run waits it takes the person's input. */
export function useFrameInput(waiting: boolean, send: HumanSender, onError: (err: unknown) => void): Pick<ImgHTMLAttributes, 'tabIndex' | 'draggable' | 'class' | 'onMouseDown' | 'onClick' | 'onWheel' | 'onKeyDown'> {
  // The point is taken where the button went down, and focusing never scrolls: a picture
  // taller than the window scrolled into view on focus, and the click then landed lower on
  // the page than where the person pressed.
  const pressedAt = useRef<{ x: number; y: number } | null>(null);
  const input = (body: Record<string, unknown>) => {
    if (!waiting) return;
    send('input', body).catch(onError);
  };
  /** Where on the page a pointer event is, as fractions of the picture. */
  const at = (event: MouseEvent) => {
    const box = (event.currentTarget as HTMLElement).getBoundingClientRect();
    const clamp = (v: number) => Math.min(1, Math.max(0, v));
    return { x: clamp((event.clientX - box.left) / box.width), y: clamp((event.clientY - box.top) / box.height) };
  };
  return {
    tabIndex: 0,
    draggable: false,
    class: waiting ? 'live-frame interactive' : 'live-frame',
    onMouseDown: (e) => {
      if (!waiting) return;
      e.preventDefault();
      pressedAt.current = at(e);
      e.currentTarget.focus({ preventScroll: true });
    },
    onClick: (e) => {
      if (!waiting) return;
      input({ kind: 'click', ...(pressedAt.current ?? at(e)), button: 'left' });
      pressedAt.current = null;
    },
    onWheel: (e) => {
      if (!waiting) return;
      e.preventDefault();
      input({ kind: 'wheel', ...at(e), deltaX: Math.round(e.deltaX), deltaY: Math.round(e.deltaY) });
    },
    onKeyDown: (e) => {
      if (!waiting) return;
      e.preventDefault();
      if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) return input({ kind: 'text', text: e.key });
      if (['Control', 'Shift', 'Alt', 'Meta'].includes(e.key)) return;
      const mods = [e.ctrlKey && 'Control', e.altKey && 'Alt', e.metaKey && 'Meta', e.shiftKey && e.key.length > 1 && 'Shift'].filter(Boolean);
      input({ kind: 'key', key: [...mods, e.key].join('+') });
    },
  };
}
