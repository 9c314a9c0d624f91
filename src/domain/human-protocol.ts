/**
 * A person in the loop, on the wire (docs/human-in-the-loop.md): the Redis stream through which
 * a waiting run hears from people. Shared by the worker (src/human/) and the local service, so
 * the key, the stream's lifetime and the approval rule live here, once; the entries' shapes are
 * contract/human.ts's.
 *
 *   {prefix}:{queue}:answers:{executionId}   stream; an entry's field is one of
 *     answer   JSON { "answer": string, "decision"?: "approve" | "deny", "by"?: string }: ends the wait (the first one wins)
 *     input    JSON HumanInput: a person's pointer, wheel or key for the page (takeover)
 *
 * One stream carries both so the worker applies a person's inputs and their final "done" in the
 * order they were given.
 */

import { answerEntry, humanInput, type AnswerEntry, type HumanAnswer, type HumanInput, type HumanKind, type HumanOutcome } from '../contract/human.js';

export function answersStreamKey(queuePrefix: string, queueName: string, executionId: string): string {
  return `${queuePrefix}:${queueName}:answers:${executionId}`;
}

export function answerOutcome(kind: HumanKind, answer: ApprovalAnswer): HumanOutcome {
  if (kind !== 'approval') return 'answered';
  return grantsApproval(answer) ? 'approved' : 'denied';
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

/** Reads an `answer` field; undefined when it is not the documented JSON (an unknown decision included). */
export function parseAnswer(raw: string): HumanAnswer | undefined {
  const read = answerEntry.safeParse(parseJson(raw));
  return read.success ? read.data : undefined;
}

/** The `answer` field of a stream entry for an answer (the local API writes it; tests too). */
export function answerField(answer: AnswerEntry): string {
  const text = answer.answer ?? answer.decision;
  if (text === undefined || text === null) throw new Error('an answer needs a text or a decision');
  const entry: AnswerEntry = { answer: text, ...(answer.decision ? { decision: answer.decision } : {}), ...(answer.by ? { by: answer.by } : {}) };
  return JSON.stringify(entry);
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

/** Reads an `input` field; undefined for anything not a well-formed input. */
export function parseInput(raw: string): HumanInput | undefined {
  const read = humanInput.safeParse(parseJson(raw));
  return read.success ? read.data : undefined;
}

/** The JSON of a stream field; undefined when it is not JSON (then it is of no shape). */
function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}
