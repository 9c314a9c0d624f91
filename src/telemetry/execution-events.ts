import type { BlockLayer, DownloadEvent, Size } from '../browser/types.js';
import type { Counters } from '../control-plane/types.js';
import type { HumanInput, HumanKind, HumanOutcome } from '../domain/human-protocol.js';
import type { ErrorCode } from '../domain/errors.js';
import type { CacheReport } from '../domain/run-cache.js';
import type { StopReason, TokenUsage } from '../model/types.js';

/**
 * The events of one execution, by name, with their fields: what the runner, the agent loop and
 * the replay emit, and what `logs.jsonl` holds, one line each (docs/counters-and-artifacts.md#event-types
 * documents every one). The event log, the metrics, the live view and the step screenshots
 * subscribe to them (telemetry/event-stream.ts); an emit site that gets a name or a field wrong
 * does not compile.
 */
export type ExecutionEvents = {
  execution_received: { workflowId?: string; workflowVersionId?: string };
  execution_failed_validation: { code: ErrorCode; message: string };
  error: { phase: 'validate' | 'started' | 'run' | 'video'; code: ErrorCode; message: string };
  input_file: { name: string; payloadPath: string; source: string; bytes: number; sha256: string; contentType: string };
  execution_skipped: { status: number; reason: string };
  execution_started: { startUrl: string; model: string; toolset: string; computerTool?: string };
  browser_ready: { durationMs: number; viewport: Size; display: Size; toolType: string };
  video_started: { durationMs: number };
  navigation: { url: string; ok: boolean; reason?: string; by: 'worker' };
  model_turn: {
    step: number;
    by: 'model' | 'repair';
    latencyMs: number;
    overheadMs: number | null;
    stopReason: StopReason;
    usage: TokenUsage;
    clearedInputTokens?: number;
    thinking?: string;
    text?: string;
    toolCalls: Array<{ id: string; name: string; toolset?: string; input: unknown }>;
  };
  model_prefix_mismatch: { step: number; level: 'error'; message: string };
  action: {
    step: number;
    by?: 'model' | 'cache' | 'repair';
    tool: string;
    action: string;
    input: unknown;
    ok: boolean;
    text?: string;
    error?: string;
    label?: string;
    point?: { x: number; y: number };
    durationMs?: number;
  };
  blocked: { url: string; layer: BlockLayer | (string & {}); reason: string; for?: 'input_file' };
  download: Omit<DownloadEvent, 'path'>;
  step_screenshot: { step: number; key: string; bytes: number; mediaType: string };
  output_invalid: { errors: string };
  finish: { status: 'completed' | 'failed'; code?: ErrorCode; reason?: string; by?: 'cache' };
  replayed_step: { step: number; by: 'cache'; actions: number };
  /** `step`: the run's steps so far; `cachedStep`: the cached step (1-based) it stopped in. */
  replay_stopped: { step: number; cachedStep: number; reason: string; next?: string };
  replay_started_later: { step: number; cachedStep: number; skipped: number; reason: string };
  /** A cached step the model was asked to redo (docs/run-cache.md#repair-not-restart), and how it ended. */
  step_repair: {
    step: number;
    cachedStep: number;
    reason: string;
    before: string[];
    after: string[];
    outcome: 'resumed' | 'flow_changed' | 'gave_up';
    modelSteps: number;
    resumedAtStep: number | null;
    note?: string;
    notEntered?: string[];
  };
  run_cache: Pick<CacheReport, keyof CacheReport>;
  run_cache_saved: { versionId: string; steps: number; actions: number };
  final_check: { matches: boolean | null; reason: string | null; latencyMs: number; usage: TokenUsage };
  profile_loaded: { id: string; loaded: boolean; cookies: number; origins: number; savedAt?: string };
  profile_unreadable: { id: string; reason: string };
  profile_stale: { id: string };
  profile_saved: { id: string; cookies: number; origins: number; hosts: string[]; bytes: number; keyId: string };
  profile_not_saved: { id: string; reason: string };
  browser_crashed: { message: string };
  waiting: { kind: HumanKind; question: string; choices: string[] | null; timeoutAt: string };
  human_input: { kind: HumanInput['kind']; target: string | { x: number; y: number }; ok: boolean; error?: string; navigationRefused?: boolean };
  resumed: { kind: HumanKind; outcome: HumanOutcome; answeredBy: string | null; waitedMs: number };
  human_timeout: { kind: HumanKind; timeoutMs: number };
  execution_completed: ExecutionEnd;
  execution_failed: ExecutionEnd;
};

/** The last line of every execution that was not skipped. */
type ExecutionEnd = {
  code?: ErrorCode;
  message?: string;
  counters: Counters & { durationMs: number };
  usage: TokenUsage & { estimatedCostUsd: number | null };
  video: { durationMs: number; frames: number; droppedFrames: number } | null;
};

export type ExecutionEventName = keyof ExecutionEvents;

/** The events that belong to a step: each carries the step's number (1-based). */
export type StepEventName = { [K in ExecutionEventName]: ExecutionEvents[K] extends { step: number } ? K : never }[ExecutionEventName];

/**
 * Every event with a step, as a list (step screenshots follow them); the check below fails to
 * compile when an event with a `step` is added to the map and not here.
 */
export const STEP_EVENTS = ['model_turn', 'model_prefix_mismatch', 'action', 'step_screenshot', 'replayed_step', 'replay_stopped', 'replay_started_later', 'step_repair'] as const satisfies readonly StepEventName[];
const everyStepEvent: [Exclude<StepEventName, (typeof STEP_EVENTS)[number]>] extends [never] ? true : never = true;
void everyStepEvent;

/** One event as subscribers see it: its fields after redaction, and its `logs.jsonl` line. */
export interface ExecutionEvent<K extends ExecutionEventName = ExecutionEventName> {
  type: K;
  fields: ExecutionEvents[K];
  line: EventLine;
}

/** A `logs.jsonl` line: the common fields (docs/counters-and-artifacts.md#logsjsonl), then the event's. */
export type EventLine = { ts: string; t: number; type: ExecutionEventName; executionId: string } & Record<string, unknown>;

/**
 * A moment on the video's timeline: an action as it touches the page, or a person's click. Not a
 * line of its own in `logs.jsonl` (the `action` and `human_input` lines say what happened); the
 * video's steps track and click markers subscribe to them.
 */
export interface TimelineMark {
  /** Epoch ms. */
  atMs: number;
  /** One line, secrets as placeholders (the stream redacts it). */
  label: string;
  /** Where a pointer action landed, in viewport CSS px. */
  point?: { x: number; y: number };
}
