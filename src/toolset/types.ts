/**
 * The action-space port (docs/action-spaces.md): what the agent loop offers the model besides `finish`,
 * and how one call of it is carried out. Three adapters sit behind it, all on the browser port:
 * the browser use toolset (browser-toolset.ts), the computer use toolset (computer-toolset.ts)
 * and the earlier computer use tool with our `navigate` (computer-tool.ts). The loop is the
 * same for all three.
 */
import type { BrowserSession, ElementIdentity, Point, Size } from '../browser/types.js';
import type { ActionSpaceKind, ComputerTool } from '../domain/action-spaces.js';
import type { ActionEffect } from '../domain/element-state.js';
import type { InputSource } from '../domain/input-references.js';
import type { SecretVault } from '../domain/secrets.js';
import type { ImageBlock, ToolDefinition, ToolResultBlock } from '../model/types.js';
import type { TextBlock, ToolUseBlock } from '../contract/recording.js';

/** What the run cache keeps of one executed action (docs/run-cache.md#what-it-holds): what it did, and to what. */
export interface ActionTrace {
  /** The call as the model made it (placeholders in place of secrets). */
  tool: string;
  toolsetName?: string;
  input: Record<string, unknown>;
  /** The page it acted on: URL of the tab before the action. */
  url: string;
  /** The element it acted on (by reference, or the one under the point), when there is one. */
  target?: ElementIdentity;
  /** The element that had the keyboard focus, for actions that type into it. */
  focus?: ElementIdentity;
  /**
   * The reference of the element it acted on (the target, else the focus) as it was before the
   * action: a value is read back from that element, not found again by a name the value may have
   * changed (docs/run-cache.md#read-back-by-identity). Of this page only: the cache never keeps it.
   */
  ref?: string;
  /** The states the action changed on its element (docs/run-cache.md#effects). */
  effect?: ActionEffect;
}

export interface ActionReport {
  /** The answer to the call, for the model. */
  result: ToolResultBlock;
  /** The member or action the call named ('unknown' when it named none). */
  action: string;
  /** Counted (docs/counters-and-artifacts.md#counters): an action against the browser (refused and failed ones too), not a read. */
  counted: boolean;
  ok: boolean;
  error?: string;
  /** One line for logs and the video's steps track; secrets as placeholders. */
  label: string;
  /** Where a pointer action landed, viewport px (the video's click marker). */
  point?: Point;
  /** Images the result carries (each counts as a screenshot sent to the model). */
  images: number;
  /** Whether the call may have changed what the page shows. */
  changesPage: boolean;
  /** Present for executed actions the run cache can replay. */
  trace?: ActionTrace;
}

export interface ActionRunContext {
  signal: AbortSignal;
  /**
   * Called once a valid action is about to touch the page, with what it will do: the video marks
   * it before the page reacts, so the marker is on the frames that show the reaction.
   */
  beforeRun?: (planned: { label: string; point?: Point }) => void;
  /**
   * Whether anything keeps the action's trace (the run cache, docs/run-cache.md). `false` skips
   * the page read the trace takes (the element under the point, the focused element): a step
   * whose run will not be cached does not pay for it. Absent means true.
   */
  trace?: boolean;
}

export interface ActionSpace {
  readonly kind: ActionSpaceKind;
  /** The tool type, as recording.json names it (`browser_toolset_20260801`, …). */
  readonly toolType: string;
  /** `anthropic-beta` flags the tool needs (none for the toolsets). */
  readonly betas: readonly string[];
  /** The display the model sees (screenshots' size; coordinates are in it). */
  readonly display: Size;
  /** The tools[] entries, `finish` aside. */
  tools(): ToolDefinition[];
  /** How to act in this space, for the system prompt. */
  readonly guide: string;
  /** How to give the page an input file in this space (when the execution has any). */
  readonly uploadHow?: string;
  /** Whether a tool call belongs to this space. */
  owns(call: ToolUseBlock): boolean;
  /** Runs one call. Never throws for a bad call (that is an `is_error` result); throws when the browser is gone. */
  run(call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport>;
  /**
   * What the model is shown before its first turn. `brief`: the page as a read shows it (what is
   * in view), for a model taking over a replay (docs/run-cache.md#replay), not the whole page's overview.
   */
  opening(signal: AbortSignal, options?: { brief?: boolean }): Promise<Array<TextBlock | ImageBlock>>;
  /**
   * A fresh screenshot, for the loop to attach to the last result of a turn that changed the
   * page (the computer toolset, whose actions answer with text only). Absent where every action
   * answers with its own screenshot, or where the model chooses what to read (the browser toolset).
   */
  observe?(signal: AbortSignal): Promise<ImageBlock>;
  /** The answer to a call not run because an earlier call of the same toolset failed in this turn. */
  notExecuted(call: ToolUseBlock): ToolResultBlock;
}

/** What every action space is built from. */
export interface ActionSpaceOptions {
  session: BrowserSession;
  /**
   * The input's values by name and the secrets among them (docs/run-cache.md#inputs-by-reference,
   * docs/secrets.md): `{{path}}` in what the model types or sets becomes the value; secrets are
   * redacted from every result.
   */
  secrets: InputSource & Pick<SecretVault, 'redact'>;
  /** Whether the browser toolset's javascript_exec is offered (specification `allowJavascript`). */
  allowJavascript: boolean;
  /** The execution's input files (docs/files-and-codes.md), by name: the only files an upload may choose. */
  inputFiles?: ReadonlyArray<{ name: string; bytes?: number; contentType?: string }>;
}

/** Which action space an execution gets, and what its model's tools look like (from the model table). */
export interface ActionSpaceChoice {
  kind: ActionSpaceKind;
  /** The model's computer use tool. */
  computer: ComputerTool;
  /** The largest screenshot the model takes. */
  images: { maxEdgePx: number; maxPixels: number };
}
