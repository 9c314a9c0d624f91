/**
 * The agent's shapes: what a run of the loop needs (its deps and input) and the state one run
 * carries from turn to turn (its tallies and outcome are the execution's, in execution/). Here,
 * apart from the loop, so that the loop (loop.ts) and the calls of a turn (tool-calls.ts) both
 * import them and neither imports the other.
 */
import type { BrowserSession } from '../browser/types.js';
import type { InputFile } from '../domain/input-files.js';
import type { SchemaValidator } from '../domain/json-schema.js';
import type { SecretVault } from '../domain/secrets.js';
import type { RunBudget } from '../domain/usage.js';
import type { Message, ModelClient, ToolDefinition } from '../model/types.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { RunCounters } from '../execution/counters.js';
import type { ActionSpace } from '../toolset/types.js';
import type { AskHuman } from './ask-human.js';
import type { RepeatWatch } from './stuck-loop.js';
import type { Specification } from '../contract/specification.js';
import type { TextBlock } from '../contract/recording.js';

export interface AgentDeps {
  model: ModelClient;
  /** What the model acts with. */
  space: ActionSpace;
  /** The browser, for the start page. */
  session: BrowserSession;
  /**
   * Where the run's events go: its lines, each action's moment on the video's timeline
   * (`timeline_mark`, as it touches the page) and, while something hears them, what the run
   * cache keeps of each executed action (`action_trace`).
   */
  events: ExecutionEventSink;
  /** Present when the run may wait for a person: the model is offered `ask_human`. */
  human?: AskHuman;
  now?: () => number;
}

export interface AgentInput {
  spec: Specification;
  modelId: string;
  vault: SecretVault;
  maxSteps: number;
  startUrl: string;
  validateOutput?: SchemaValidator;
  /**
   * The execution's input files (docs/files-and-codes.md), fetched before the run: what file choosers may
   * be given, by name (BrowserSession.setInputFiles). Never show `path` to the model.
   */
  inputFiles?: readonly InputFile[];
  maxTokens?: number;
  /** The run's caps, told to the model in words (the meter of the run's model pipeline holds them: runner/usage-meter.ts). */
  budget?: RunBudget;
  /** Steps already taken (a run that continues after a replay): the model learns what was done. */
  resume?: { done: string; steps: number };
  signal: AbortSignal;
}

/** One run of the loop: what every request repeats, the conversation, and the turn-to-turn state. */
export interface AgentRun {
  deps: AgentDeps;
  input: AgentInput;
  /** The run's counters, as its events told them: a step's number, the step cap. */
  counters: RunCounters;
  now: () => number;
  system: TextBlock[];
  tools: ToolDefinition[];
  history: Message[];
  /** Whether the model was asked once to call finish after a turn without tool calls. */
  nudged: boolean;
  /** Invalid `finish` outputs the model was let correct. */
  outputRetries: number;
  lastResponseAt?: number;
  /** Set once a turn used most of a context the API does not manage: the run ends before the next request. */
  overflow?: string;
  /** Identical actions on an unchanged page, across turns (stuck-loop.ts). */
  repeats: RepeatWatch;
}
