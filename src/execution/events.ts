import type { BlockLayer, DownloadEvent, Point, Size } from '../browser/types.js';
import type { ErrorCode } from '../contract/errors.js';
import type { HumanInput, HumanKind, HumanOutcome } from '../contract/human.js';
import type { LogLine } from '../contract/log-line.js';
import type { CacheReport, ModelUsageReport, UsageReport } from '../contract/output.js';
import type { BilledIteration, ModelResponse, TokenUsage } from '../contract/recording.js';
import type { Counters } from '../contract/reports.js';
import { createEventStream, type EventSink, type EventSource, type EventStream, type EventStreamOptions } from '../telemetry/event-stream.js';
import type { ActionTrace } from '../toolset/types.js';

type StopReason = ModelResponse['stopReason'];

/**
 * The events of one execution, by name, with their fields: what the runner, the agent loop and
 * the replay emit. The event map lives here, on the execution's own floor below the runner, the
 * run cache and the agent that all tell them; the stream itself (telemetry/event-stream.ts) knows
 * no event. An emit site that gets a name or a field wrong does not compile.
 *
 * `LoggedEvents` are the lines of `logs.jsonl`, one each (docs/counters-and-artifacts.md#event-types
 * documents every one); the event log, the live view, the metrics and the step screenshots
 * subscribe to them. `InternalEvents` are heard by the worker's own subscribers and are never a
 * line (they are told with `notify`, not `emit`).
 */
export type LoggedEvents = {
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
    /** The model that answered (the response's `model`). */
    model?: string;
    latencyMs: number;
    overheadMs: number | null;
    stopReason: StopReason;
    /** The answer's own usage (the API's top-level usage). */
    usage: TokenUsage;
    /** Each sampling the API billed for the request, when it itemised them (a compaction's tokens are only here). */
    billed?: BilledIteration[];
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
  /** The same action again on a page it did not change (docs/action-spaces.md#stuck-loops): answered as an error, or the run stopped. */
  repeated_action: { step: number; tool: string; action: string; label: string; repeats: number; outcome: 'warned' | 'stopped' };
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
  final_check: { matches: boolean | null; reason: string | null; latencyMs: number; usage: TokenUsage; model?: string; stopReason?: StopReason };
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
  /** Added at the end of the map: a cached action passed over because the state it brings about holds already (docs/run-cache.md#effects). */
  replay_passed_over: { step: number; cachedStep: number; action: string; state: string };
  /**
   * Added at the end of the map: a value-entering action's read-back from the element it went into
   * (docs/run-cache.md#read-back-by-identity): what it had to hold (input values by name) and what
   * it held. The evidence a final check may rest on where the final page cannot show the record.
   */
  read_back: { step: number; by: 'cache' | 'repair'; element: string; expected: string; held: string; ok: boolean };
  /** Added at the end of the map: the run's model is deprecated and stops answering on `endOfLife` (docs/model.md#retired-and-deprecated-models). */
  model_deprecated: { model: string; endOfLife: string };
  /**
   * Added at the end of the map: something a page made reached one of the execution's limits
   * (docs/security.md#limits). `limit` names the configuration variable, `max` its value, `value`
   * what was measured (same unit), `action` what the worker did about it: `cut` (the excess was
   * dropped and the run goes on), `closed` (a popup closed), `stopped` (the video ends early) or
   * `ended` (the execution ends with `resource_limit`).
   */
  resource_limit_reached: { limit: string; max: number; value: number; unit: 'bytes' | 'chars' | 'tabs' | 'entries'; action: 'cut' | 'closed' | 'stopped' | 'ended'; detail?: string };
};

/** The last line of every execution that was not skipped. */
type ExecutionEnd = {
  code?: ErrorCode;
  message?: string;
  counters: Counters & { durationMs: number };
  usage: UsageReport;
  video: { durationMs: number; frames: number; droppedFrames: number } | null;
};

/**
 * Events no reader of the run sees: each has subscribers inside the worker and is never a line of
 * `logs.jsonl` (what they say is there already, in the `action` and `human_input` lines, or is
 * the page itself).
 */
export type InternalEvents = {
  /**
   * A moment on the video's timeline, dated by the event: an action as it touches the page (before
   * the page reacts, so a click's marker is on the frames that show the reaction), a person's
   * click. The video's steps track and click markers hear it.
   */
  timeline_mark: { label: string; point?: Point };
  /**
   * What the run cache keeps of an action a model step ran (its element as the page showed it).
   * Taking it costs page reads: the loop asks for it only while something hears this event.
   */
  action_trace: { step: number; trace: ActionTrace };
  /**
   * One model request's usage and estimated cost, told by the meter of the run's model pipeline, which
   * every request passes (the agent's, a final check's, a repair's): the counters and the metrics hear it. The
   * `model_turn` and `final_check` lines already show the usage.
   */
  model_usage: { model: string; usage: TokenUsage; costUsd: number; prices: ModelUsageReport['prices'] };
  /**
   * Added at the end of the map: an action run against the browser that counts as one of the run's
   * `nAgentActions` (not a read, not `finish`; a blocked or failed one counts). The `action` line
   * shows it; the counters hear this (execution/counters.ts).
   */
  action_counted: { step: number; action: string };
  /**
   * Added at the end of the map: images captured for the model (`nScreenshots`): a screenshot, the
   * page after a turn, a person's answer, a final check's or a repair's picture. `step`: the run's
   * steps so far. The counters hear it.
   */
  images_captured: { step: number; images: number };
  /**
   * Added at the end of the map: a request of a step going to the model (the agent's, a repair's;
   * not a final check's), told by the run's model pipeline before it is sent, with the images new
   * in it (its newest user message's, top-level or inside tool results), as the bytes the model
   * gets. Step screenshots hear it. The bytes are a Buffer: redaction passes over them.
   */
  model_request: { images: Array<{ mediaType: 'image/png' | 'image/jpeg' | 'image/webp'; data: Buffer }> };
};

/** Every event of an execution, logged or internal. */
export type ExecutionEvents = LoggedEvents & InternalEvents;
export type LoggedEventName = keyof LoggedEvents;
export type ExecutionEventName = keyof ExecutionEvents;

// A name in both maps would be a line and not one: the check fails to compile.
const disjoint: [keyof LoggedEvents & keyof InternalEvents] extends [never] ? true : never = true;
void disjoint;

/** The logged events that belong to a step: each carries the step's number (1-based). */
export type StepEventName = { [K in LoggedEventName]: LoggedEvents[K] extends { step: number } ? K : never }[LoggedEventName];

/**
 * Every logged event with a step, as a list (step screenshots follow them); the check below fails
 * to compile when an event with a `step` is added to the map and not here.
 */
export const STEP_EVENTS = ['model_turn', 'model_prefix_mismatch', 'action', 'repeated_action', 'step_screenshot', 'replayed_step', 'replay_stopped', 'replay_started_later', 'step_repair', 'replay_passed_over', 'read_back'] as const satisfies readonly StepEventName[];
const everyStepEvent: [Exclude<StepEventName, (typeof STEP_EVENTS)[number]>] extends [never] ? true : never = true;
void everyStepEvent;

/** Where the runner, the agent and the replay tell an execution's events. */
export type ExecutionEventSink = EventSink<LoggedEvents, InternalEvents>;
/** Where an execution's events are heard (metrics, the run cache, the video, step screenshots). */
export type ExecutionEventSource = EventSource<LoggedEvents, InternalEvents>;
/** One execution's stream: its events told and heard. */
export type ExecutionEventStream = EventStream<LoggedEvents, InternalEvents>;
/** A `logs.jsonl` line: the common fields (docs/counters-and-artifacts.md#logsjsonl), then the event's. */
export type ExecutionLine = LogLine & { type: LoggedEventName };

/** The stream of one execution, typed by its events. */
export function createExecutionEvents(options: EventStreamOptions): ExecutionEventStream {
  return createEventStream<LoggedEvents, InternalEvents>(options);
}
