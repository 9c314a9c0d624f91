import { humanTimeout } from '../agent/ask-human.js';
import type { BrowserSession, MouseButton } from '../browser/types.js';
import type { ControlPlane } from '../control-plane/types.js';
import { answerOutcome } from '../domain/human-protocol.js';
import type { HumanDesk } from '../human/types.js';
import type { Logger } from '../telemetry/types.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { HumanGate, HumanRequest } from '../execution/human.js';
import type { HumanAnswer, HumanInput } from '../contract/human.js';

/**
 * The runner's side of `ask_human` (docs/human-in-the-loop.md): tells the API the run waits,
 * stops the deadline's clock, reads the answers stream until an answer or the end of the run's
 * waiting budget (one `timeoutMs` for all its questions together), passes a
 * person's input to this execution's page meanwhile (a takeover), then tells the API the run
 * goes on. The browser, the video and the job lock are untouched: the run is alive throughout.
 */

export interface RunnerHumanGate extends HumanGate {
  /** The run is over: answers written after the last one read are logged as ignored; the stream goes. */
  release(): Promise<void>;
}

export function createHumanGate(options: {
  executionId: string;
  desk: HumanDesk;
  controlPlane?: ControlPlane;
  session: BrowserSession;
  events: ExecutionEventSink;
  logger: Logger;
  /** How long the run may wait for people, all its questions together. */
  timeoutMs: number;
  /** Stops the run's deadline until the returned function is called. */
  pauseDeadline(): () => void;
  /** Hides secret values in text that leaves the worker (the question, in the API call). */
  redact(text: string): string;
  now: () => number;
}): RunnerHumanGate {
  const { executionId, desk, controlPlane, session, events, logger, now } = options;
  let lastRead: string | undefined;
  /** Time this run has waited for people so far: every ask draws on `timeoutMs` in all. */
  let waitedMs = 0;

  const applyInput = async (input: HumanInput, signal: AbortSignal): Promise<void> => {
    const { width, height } = session.viewport;
    const before = session.currentUrl();
    const point = 'x' in input ? { x: Math.round(input.x * (width - 1)), y: Math.round(input.y * (height - 1)) } : undefined;
    const target = point ?? (input.kind === 'key' ? namedKey(input.key) : 'focused element');
    const at = now();
    try {
      switch (input.kind) {
        case 'click':
          // On the video's timeline as the agent's clicks are.
          events.notify('timeline_mark', { label: 'person: click', point: point! }, at);
          await session.click(point!.x, point!.y, { button: (input.button ?? 'left') as MouseButton, clickCount: 1 }, signal);
          break;
        case 'move':
          await session.mouseMove(point!.x, point!.y, signal);
          break;
        case 'wheel':
          await session.wheel(point!.x, point!.y, input.deltaX ?? 0, input.deltaY ?? 0, signal);
          break;
        case 'key': {
          const keys = input.key.split('+').filter(Boolean);
          for (const key of keys) await session.keyDown(key, signal);
          for (const key of keys.reverse()) await session.keyUp(key, signal);
          break;
        }
        case 'text':
          await session.typeText(input.text, signal);
          break;
      }
      const returned = input.kind === 'click' || input.kind === 'key' ? await backFromRefusal(before, signal) : false;
      // The kind and where, never what was typed (it may be a password).
      events.emit('human_input', { kind: input.kind, target, ok: true, ...(returned ? { navigationRefused: true } : {}) }, at);
    } catch (error) {
      events.emit('human_input', { kind: input.kind, target, ok: false, error: error instanceof Error ? error.message : String(error) }, at);
    }
  };

  /**
   * Waits until the page is still. Settling never fails for a busy page (it is capped); it fails
   * when the page is gone, which what comes next meets and reports: here it is only logged.
   */
  const settled = (signal: AbortSignal): Promise<void> =>
    session.settle(signal).catch((error: unknown) => logger.warn({ err: String(error) }, 'the page could not settle after a person acted on it'));

  /**
   * A person's click or key that started a navigation the allow-list refused (a link to another
   * host) leaves Chromium's error page: the page goes back to where the person was
   * (docs/human-in-the-loop.md#takeover-a-person-in-the-browser). The refusal itself is reported
   * by the confinement as a `blocked` event.
   */
  const backFromRefusal = async (before: string, signal: AbortSignal): Promise<boolean> => {
    if (isErrorPage(before)) return false;
    await settled(signal);
    if (!isErrorPage(session.currentUrl())) return false;
    const back = await session.history('back', signal);
    if (!back.ok || isErrorPage(session.currentUrl())) await session.navigate(before, signal);
    return true;
  };

  return {
    async ask(request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer> {
      // Answers after the last one read (a second answer to the previous question) are logged as ignored.
      const after = await desk.mark(executionId, lastRead);
      lastRead = after;
      const waitingAt = now();
      // Every ask draws on the one budget (docs/human-in-the-loop.md#timeouts).
      const leftMs = options.timeoutMs - waitedMs;
      if (leftMs <= 0) {
        events.emit('human_timeout', { kind: request.kind, timeoutMs: options.timeoutMs });
        throw humanTimeout(options.timeoutMs);
      }
      const deadline = waitingAt + leftMs;
      const timeoutAt = new Date(deadline).toISOString();
      // From here until the answer the run waits: its own clock stops, the waiting budget runs.
      const resumeDeadline = options.pauseDeadline();
      let answer;
      try {
        events.emit('waiting', { kind: request.kind, question: request.question, choices: request.choices, timeoutAt });
        if (controlPlane) {
          const report = { waitingAt: new Date(waitingAt).toISOString(), kind: request.kind, question: options.redact(request.question), choices: request.choices?.map(options.redact) ?? null, timeoutAt };
          await controlPlane.markWaiting(executionId, report, signal).catch((error: unknown) => {
            if (!signal.aborted) logger.warn({ err: String(error) }, 'the API could not be told the run waits for a person; waiting anyway');
          });
        }
        answer = await desk.wait({ executionId, after, timeoutMs: Math.max(0, deadline - now()), onInput: (input) => applyInput(input, signal), signal });
      } finally {
        waitedMs += now() - waitingAt;
        resumeDeadline();
      }
      if (!answer) {
        events.emit('human_timeout', { kind: request.kind, timeoutMs: options.timeoutMs });
        throw humanTimeout(options.timeoutMs);
      }
      lastRead = answer.id;
      const resumedAt = now();
      events.emit('resumed', { kind: request.kind, outcome: answerOutcome(request.kind, answer), answeredBy: answer.by, waitedMs: resumedAt - waitingAt });
      if (controlPlane) {
        await controlPlane.markResumed(executionId, { resumedAt: new Date(resumedAt).toISOString(), answeredBy: answer.by }, signal).catch((error: unknown) => {
          if (!signal.aborted) logger.warn({ err: String(error) }, 'the API could not be told the run goes on');
        });
      }
      // A person may have left the page mid-load: the model's view is taken once it is still.
      await settled(signal);
      return { answer: answer.answer, decision: answer.decision, by: answer.by };
    },
    release: () => desk.release(executionId, lastRead),
  };
}

function isErrorPage(url: string): boolean {
  return url.startsWith('chrome-error://');
}

/** A key's name for the log: named keys as they are, a character (which could spell a password) as "character". */
function namedKey(key: string): string {
  return key
    .split('+')
    .map((part) => (part.length === 1 ? 'character' : part))
    .join('+');
}
