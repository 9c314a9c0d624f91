/**
 * A person in the loop on the wire (docs/human-in-the-loop.md): what a waiting run asks, the
 * entries of the answers stream the local API writes and the worker reads, and the local API's
 * bodies for an answer and for a person's input.
 */
import { z } from 'zod';

export const HUMAN_KINDS = ['question', 'approval', 'takeover'] as const;
export type HumanKind = (typeof HUMAN_KINDS)[number];

/** A person's explicit choice on an approval (the dashboard's Approve and Deny buttons). */
export const HUMAN_DECISIONS = ['approve', 'deny'] as const;
export type HumanDecision = (typeof HUMAN_DECISIONS)[number];

/** How a wait ended, as the `resumed` line and the answers metric say it. */
export const HUMAN_OUTCOMES = ['answered', 'approved', 'denied', 'timed_out'] as const;
export type HumanOutcome = (typeof HUMAN_OUTCOMES)[number];

/**
 * An `answer` entry of the answers stream: `{ "answer": string, "decision"?: "approve" | "deny",
 * "by"?: string }`, read as the answer the run goes on with. A decision alone is an answer (its
 * word is the text shown to the model and kept in output.json); a `by` that is not a name is no
 * one's; an unknown decision, or neither text nor decision, is not an answer.
 */
export const answerEntry = z
  .object({
    answer: z.string().optional(),
    decision: z.enum(HUMAN_DECISIONS).nullish(),
    by: z.unknown().optional(),
  })
  .refine((entry) => entry.answer !== undefined || (entry.decision !== undefined && entry.decision !== null), 'an answer needs a text or a decision')
  .transform((entry) => ({
    /** The answer's text: a choice, free text, `done` after a takeover; the decision's word when only a decision was given. */
    answer: entry.answer ?? entry.decision!,
    /** An explicit approve or deny; null when the person wrote text only. */
    decision: entry.decision ?? null,
    by: typeof entry.by === 'string' && entry.by !== '' ? entry.by : null,
  }));
export type HumanAnswer = z.output<typeof answerEntry>;
/** An `answer` entry as written (the local API writes it; tests too). */
export type AnswerEntry = z.input<typeof answerEntry>;

/** The local API's `POST /api/executions/{id}/answer` body: an answer, a decision, or both. */
export const answerRequest = z.strictObject({
  answer: z
    .string()
    .min(1)
    .max(10_000)
    .meta({ description: 'The answer: a choice, free text, "done" after a takeover. To an approval, only the exact word "approve" grants; better send `decision`.' })
    .optional(),
  decision: z
    .enum(HUMAN_DECISIONS)
    .meta({ description: "A person's choice on an approval (the dashboard's Approve and Deny buttons): it decides, whatever `answer` says. Give `answer`, `decision` or both." })
    .optional(),
  by: z.string().max(200).meta({ description: 'Ignored: the answer is recorded under the signed-in identity (the key or session of the request).' }).optional(),
});

/** Pointer positions are fractions of the page (0–1), so a viewer showing a scaled picture needs no knowledge of the viewport. */
const fraction = z.number().min(0).max(1);
const delta = z.number().min(-10_000).max(10_000);
const BUTTONS = ['left', 'middle', 'right'] as const;

/** Each field of a person's input, declared once for the stream entry and the API's body. */
const inputFields = {
  x: fraction.meta({ description: 'Pointer position as a fraction of the page width.' }),
  y: fraction.meta({ description: 'Pointer position as a fraction of the page height.' }),
  button: z.enum(BUTTONS),
  deltaX: delta,
  deltaY: delta,
  key: z.string().min(1).max(64).meta({ description: 'A key name (Enter, Tab, Backspace, ArrowDown, Control+a …).' }),
  text: z.string().min(1).max(10_000).meta({ description: 'Text typed into the focused element; never logged.' }),
};
export const INPUT_KINDS = ['click', 'move', 'wheel', 'key', 'text'] as const;

/** An `input` entry of the answers stream: a person's pointer, wheel, key or text for the page (takeover), with what its kind needs. */
export const humanInput = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('click'), x: inputFields.x, y: inputFields.y, button: inputFields.button.default('left') }),
  z.object({ kind: z.literal('move'), x: inputFields.x, y: inputFields.y }),
  z.object({ kind: z.literal('wheel'), x: inputFields.x, y: inputFields.y, deltaX: inputFields.deltaX.default(0), deltaY: inputFields.deltaY.default(0) }),
  z.object({ kind: z.literal('key'), key: inputFields.key }),
  z.object({ kind: z.literal('text'), text: inputFields.text }),
]);
export type HumanInput = z.output<typeof humanInput>;

/**
 * The local API's `POST /api/executions/{id}/input` body: one object whose kind says which of
 * the other fields it needs (the handler reads it as a `humanInput`, else answers what is missing).
 */
export const liveInputRequest = z.strictObject({
  kind: z.enum(INPUT_KINDS),
  x: inputFields.x.optional(),
  y: inputFields.y.optional(),
  button: inputFields.button.optional(),
  deltaX: inputFields.deltaX.optional(),
  deltaY: inputFields.deltaY.optional(),
  key: inputFields.key.optional(),
  text: inputFields.text.optional(),
});
