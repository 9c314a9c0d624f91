/**
 * A person in the loop, on the wire (docs/human-in-the-loop.md): the Redis stream through which
 * a waiting run hears from people. Shared by the worker (src/human/) and the local service, so
 * the key, the entry shapes, the stream's lifetime and the approval rule live here, once.
 *
 *   {prefix}:{queue}:answers:{executionId}   stream; an entry's field is one of
 *     answer   JSON { "answer": string, "decision"?: "approve" | "deny", "by"?: string }: ends the wait (the first one wins)
 *     input    JSON HumanInput: a person's pointer, wheel or key for the page (takeover)
 *
 * One stream carries both so the worker applies a person's inputs and their final "done" in the
 * order they were given.
 */

export function answersStreamKey(queuePrefix: string, queueName: string, executionId: string): string {
  return `${queuePrefix}:${queueName}:answers:${executionId}`;
}

export type HumanKind = 'question' | 'approval' | 'takeover';
export const HUMAN_KINDS: readonly HumanKind[] = ['question', 'approval', 'takeover'];

/** How a wait ended, as the `resumed` line and the answers metric say it. */
export type HumanOutcome = 'answered' | 'approved' | 'denied' | 'timed_out';

export function answerOutcome(kind: HumanKind, answer: ApprovalAnswer): HumanOutcome {
  if (kind !== 'approval') return 'answered';
  return grantsApproval(answer) ? 'approved' : 'denied';
}

/** A person's explicit choice on an approval (the dashboard's Approve and Deny buttons). */
export type HumanDecision = 'approve' | 'deny';
export const HUMAN_DECISIONS: readonly HumanDecision[] = ['approve', 'deny'];

export interface HumanAnswer {
  /** The answer's text: a choice, free text, `done` after a takeover; the decision's word when only a decision was given. */
  answer: string;
  /** An explicit approve or deny; null when the person wrote text only. */
  decision: HumanDecision | null;
  by: string | null;
}

/** What the approval rule reads of an answer. */
export type ApprovalAnswer = Pick<HumanAnswer, 'answer' | 'decision'>;

/**
 * Whether an answer grants an approval (docs/human-in-the-loop.md#approvals): an explicit
 * `approve` decision, or, with no decision, a text that is the word `approve` and nothing else
 * (case and surrounding white space aside). A decision is the person's choice and wins over the
 * text beside it. Nothing else grants: not a text that starts with an approving word ("OK, no -
 * do not pay"), not "approved" or "yes". The only place the rule is written; every reader of an
 * approval (the model's result, the metrics, the log) asks it.
 */
export function grantsApproval(answer: ApprovalAnswer): boolean {
  if (answer.decision !== null) return answer.decision === 'approve';
  return answer.answer.trim().toLowerCase() === 'approve';
}

/**
 * A person's input for the page. Pointer positions are fractions of the page (0–1), so a viewer
 * showing a scaled picture needs no knowledge of the viewport.
 */
export type HumanInput =
  | { kind: 'click'; x: number; y: number; button?: 'left' | 'middle' | 'right' }
  | { kind: 'move'; x: number; y: number }
  | { kind: 'wheel'; x: number; y: number; deltaX?: number; deltaY?: number }
  | { kind: 'key'; key: string }
  | { kind: 'text'; text: string };

/** Reads an `answer` field; undefined when it is not the documented JSON (an unknown decision included). */
export function parseAnswer(raw: string): HumanAnswer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { answer, decision, by } = value as Record<string, unknown>;
  if (decision !== undefined && decision !== null && !(HUMAN_DECISIONS as readonly unknown[]).includes(decision)) return undefined;
  const chosen = (decision ?? null) as HumanDecision | null;
  // A decision alone is an answer: its word is the text shown to the model and kept in output.json.
  const text = typeof answer === 'string' ? answer : answer === undefined && chosen ? chosen : undefined;
  if (text === undefined) return undefined;
  return { answer: text, decision: chosen, by: typeof by === 'string' && by !== '' ? by : null };
}

/** The `answer` field of a stream entry for an answer (the local API writes it; tests too). */
export function answerField(answer: { answer?: string; decision?: HumanDecision | null; by?: string | null }): string {
  const text = answer.answer ?? answer.decision;
  if (text === undefined || text === null) throw new Error('an answer needs a text or a decision');
  return JSON.stringify({ answer: text, ...(answer.decision ? { decision: answer.decision } : {}), ...(answer.by ? { by: answer.by } : {}) });
}

/**
 * How long an answers stream lives after a write (docs/human-in-the-loop.md#the-answers-stream):
 * until the question's deadline, then ANSWERS_STREAM_GRACE_MS more. The worker deletes the stream
 * when its run ends; the expiry removes the streams nobody deletes (a worker killed mid-wait, an
 * answer written after the end). Without a known deadline, the longest wait a run may have.
 */
export const ANSWERS_STREAM_GRACE_MS = 86_400_000;
export const LONGEST_HUMAN_WAIT_MS = 30 * 86_400_000;

export function answersStreamTtlMs(timeoutAt: string | null | undefined, nowMs: number): number {
  const deadline = timeoutAt ? Date.parse(timeoutAt) : Number.NaN;
  const untilDeadline = Number.isFinite(deadline) ? Math.min(Math.max(0, deadline - nowMs), LONGEST_HUMAN_WAIT_MS) : LONGEST_HUMAN_WAIT_MS;
  return untilDeadline + ANSWERS_STREAM_GRACE_MS;
}

const fraction = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1;
const delta = (v: unknown): boolean => v === undefined || (typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= 10_000);

/** Reads an `input` field; undefined for anything not a well-formed input. */
export function parseInput(raw: string): HumanInput | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  switch (value.kind) {
    case 'click': {
      const button = value.button ?? 'left';
      if (!fraction(value.x) || !fraction(value.y) || (button !== 'left' && button !== 'middle' && button !== 'right')) return undefined;
      return { kind: 'click', x: value.x, y: value.y, button };
    }
    case 'move':
      return fraction(value.x) && fraction(value.y) ? { kind: 'move', x: value.x, y: value.y } : undefined;
    case 'wheel':
      if (!fraction(value.x) || !fraction(value.y) || !delta(value.deltaX) || !delta(value.deltaY)) return undefined;
      return { kind: 'wheel', x: value.x, y: value.y, deltaX: (value.deltaX as number | undefined) ?? 0, deltaY: (value.deltaY as number | undefined) ?? 0 };
    case 'key':
      return typeof value.key === 'string' && value.key.length > 0 && value.key.length <= 64 ? { kind: 'key', key: value.key } : undefined;
    case 'text':
      return typeof value.text === 'string' && value.text.length > 0 && value.text.length <= 10_000 ? { kind: 'text', text: value.text } : undefined;
    default:
      return undefined;
  }
}
