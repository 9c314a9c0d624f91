/**
 * A person in the loop, on the wire (docs/human-in-the-loop.md): the Redis stream through which
 * a waiting run hears from people. Shared by the worker (src/human/) and the local service, so
 * the key and the entry shapes live here, once.
 *
 *   {prefix}:{queue}:answers:{executionId}   stream; an entry's field is one of
 *     answer   JSON { "answer": string, "by"?: string }: ends the wait (the first one wins)
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

/** Answers a person gives to grant an approval; anything else is read as a refusal. */
const GRANTED = /^\s*(approve|approved|yes|y|ok|okay|allow|allowed|accept|accepted|confirm|confirmed|go ahead|proceed)\b/i;

export function grantsApproval(answer: string): boolean {
  return GRANTED.test(answer);
}

/** How a wait ended, as the `resumed` line and the answers metric say it. */
export type HumanOutcome = 'answered' | 'approved' | 'denied' | 'timed_out';

export function answerOutcome(kind: HumanKind, answer: string): HumanOutcome {
  if (kind !== 'approval') return 'answered';
  return grantsApproval(answer) ? 'approved' : 'denied';
}

export interface HumanAnswer {
  answer: string;
  by: string | null;
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

/** Reads an `answer` field; undefined when it is not the documented JSON. */
export function parseAnswer(raw: string): HumanAnswer | undefined {
  try {
    const value = JSON.parse(raw) as { answer?: unknown; by?: unknown };
    if (typeof value?.answer !== 'string') return undefined;
    return { answer: value.answer, by: typeof value.by === 'string' && value.by !== '' ? value.by : null };
  } catch {
    return undefined;
  }
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
