/**
 * `recording.json` (docs/counters-and-artifacts.md#artifacts, docs/operations.md#playing-back-a-recording):
 * the model's responses of a run, enough to play it back with no model. The responses follow the
 * Messages API's JSON (so a recording is the wire format) in the model port's own words; the
 * model port (model/types.ts) takes its response types from here.
 */
import { z } from 'zod';

export const RECORDING_FORMAT = 'execution-worker/recording@1';

export const cacheControl = z.object({ type: z.literal('ephemeral') });
export type CacheControl = z.infer<typeof cacheControl>;

export const textBlock = z.object({ type: z.literal('text'), text: z.string(), cache_control: cacheControl.optional() });
export type TextBlock = z.infer<typeof textBlock>;

export const toolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
  /** Set on a call to a member of a client toolset (`browser`, `computer`); `name` is the member. */
  toolset_name: z.string().optional(),
});
export type ToolUseBlock = z.infer<typeof toolUseBlock>;

/** Blocks the worker does not interpret (thinking, redacted_thinking, …): kept whole and passed back verbatim. */
export const opaqueBlock = z.looseObject({ type: z.string().refine((type) => type !== 'text' && type !== 'tool_use', { abort: true }) });
export type OpaqueBlock = z.infer<typeof opaqueBlock>;

const TEXT_NEEDS = 'a text block needs a string text';
const TOOL_USE_NEEDS = 'a tool_use block needs a string id, a string name and an input';

/** A block of the model's answer; a fault says what a block of its type needs. */
export const assistantBlock = z.union([textBlock, toolUseBlock, opaqueBlock], {
  error: (issue) => {
    const type = issue.input !== null && typeof issue.input === 'object' ? (issue.input as { type?: unknown }).type : undefined;
    if (type === 'text') return TEXT_NEEDS;
    if (type === 'tool_use') return TOOL_USE_NEEDS;
    return 'must be an object with a string "type"';
  },
});
export type AssistantBlock = z.infer<typeof assistantBlock>;

const aCount = z.number({ error: 'must be a number' });
export const tokenUsage = z.object(
  { inputTokens: aCount, outputTokens: aCount, cacheReadInputTokens: aCount, cacheCreationInputTokens: aCount },
  { error: 'must be an object' },
);
export type TokenUsage = z.infer<typeof tokenUsage>;

/** What the client and the API did around a turn (docs/model.md#conversation-rules). */
export const turnNotes = z.object({
  /** The context the request ran in: whether the API keeps it bounded, and the model's window. */
  context: z.object({ managed: z.boolean(), maxInputTokens: z.number() }).optional(),
  /** Input tokens the API's context management cleared from this request. */
  clearedInputTokens: z.number().optional(),
  /** The API refused a thinking block's prefix; the request was sent again with `drop_block`. */
  prefixMismatch: z.string().optional(),
});
export type TurnNotes = z.infer<typeof turnNotes>;

const aString = z.string({ error: 'must be a string' });

/**
 * One sampling the API billed within a request (its `usage.iterations`): the answer's own
 * (`message`), a compaction of the conversation (`compaction`), or another kind the API adds.
 * `model` is set where it is not the request's own model.
 */
export const billedIteration = z.object(
  { type: aString, model: aString.optional(), usage: tokenUsage },
  { error: 'must be an object' },
);
export type BilledIteration = z.infer<typeof billedIteration>;

export const modelResponse = z.object(
  {
    id: aString,
    model: aString,
    content: z.array(assistantBlock, { error: 'must be an array' }),
    /** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, `pause_turn`, or one the API adds. */
    stopReason: aString,
    /** The answer's own sampling, as the API's top-level `usage` gives it: what the model read and wrote for this answer. */
    usage: tokenUsage,
    /**
     * Everything the request was billed, sampling by sampling, when the API itemised it (a
     * compaction's tokens are in none of the top-level fields). Absent: `usage` alone.
     * domain/usage.ts `billedParts` is the one reader.
     */
    billed: z.array(billedIteration, { error: 'must be an array' }).optional(),
    /** Absent in recordings made before notes existed. */
    notes: turnNotes.optional(),
  },
  { error: 'must be an object' },
);
export type ModelResponse = z.infer<typeof modelResponse>;

export const recordedTurn = z.object(
  {
    /** Milliseconds the model took for this turn. */
    latencyMs: z.number({ error: 'must be a number ≥ 0' }).min(0, 'must be a number ≥ 0'),
    response: modelResponse,
  },
  { error: 'must be an object' },
);
export type RecordedTurn = z.infer<typeof recordedTurn>;

const DISPLAY = 'must be { width, height } in whole pixels';
const pixels = z.number({ error: DISPLAY });
const nonEmpty = z.string({ error: 'must be a non-empty string' }).min(1, 'must be a non-empty string');

export const recordingFile = z.object(
  {
    format: z.literal(RECORDING_FORMAT, { error: (issue) => `must be "${RECORDING_FORMAT}" (found ${JSON.stringify(issue.input ?? null)})` }),
    model: nonEmpty,
    /** The action space's tool type (`browser_toolset_20260801`, `computer_toolset_20260801`, `computer_20251124`, …). */
    toolVersion: nonEmpty,
    display: z
      .object({ width: pixels, height: pixels }, { error: DISPLAY })
      .refine((size) => [size.width, size.height].every((side) => Number.isInteger(side) && side > 0), DISPLAY),
    turns: z.array(recordedTurn, { error: 'must be an array' }),
  },
  { error: 'must be a JSON object' },
);
export type RecordingFile = z.infer<typeof recordingFile>;
