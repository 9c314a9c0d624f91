/**
 * The action spaces (docs/action-spaces.md) and the tools behind them: one row per tool type the
 * worker can declare to the model. The kinds, the tool-type unions, the beta flags, zoom and how
 * each tool is declared all derive from this table; which model gets which row is the model
 * table's (model/tool-versions.ts).
 */
import { TOOLSETS } from '../contract/specification.js';

/** The specification's `toolset`: the browser toolset, or computer use. */
export const ACTION_SPACE_KINDS = TOOLSETS;
export type ActionSpaceKind = (typeof ACTION_SPACE_KINDS)[number];

interface ToolTypeRow {
  kind: ActionSpaceKind;
  /** `toolset`: a client toolset entry (the SDK's members run it); `computer`: one `computer` tool declared with the display's size. */
  declared: 'toolset' | 'computer';
  /** The `anthropic-beta` flag the tool needs (the toolsets need none). */
  beta?: string;
  /** Whether the tool has the `zoom` action (`computer_20251124` only when declared with `enable_zoom`). */
  zoom: boolean;
}

/** Newest first within each kind. */
export const TOOL_TYPES = {
  browser_toolset_20260801: { kind: 'browser', declared: 'toolset', zoom: true },
  computer_toolset_20260801: { kind: 'computer', declared: 'toolset', zoom: true },
  computer_20251124: { kind: 'computer', declared: 'computer', beta: 'computer-use-2025-11-24', zoom: true },
  computer_20250124: { kind: 'computer', declared: 'computer', beta: 'computer-use-2025-01-24', zoom: false },
} as const satisfies Record<string, ToolTypeRow>;

type Rows = typeof TOOL_TYPES;
export type ToolType = keyof Rows;
/** The computer use tool's versions (the computer toolset and the single `computer` tool). */
export type ComputerToolType = { [T in ToolType]: Rows[T]['kind'] extends 'computer' ? T : never }[ToolType];
/** Tools declared as a client toolset entry. */
export type ToolsetType = { [T in ToolType]: Rows[T]['declared'] extends 'toolset' ? T : never }[ToolType];
/** The versions declared as one `computer` tool. */
export type SingleComputerToolType = Exclude<ComputerToolType, ToolsetType>;

export const BROWSER_TOOLSET = 'browser_toolset_20260801' satisfies ToolsetType & ToolType;
export const COMPUTER_TOOLSET = 'computer_toolset_20260801' satisfies ToolsetType & ComputerToolType;

/** A model's computer use tool: its version, the beta flag it needs, and whether it zooms. */
export interface ComputerTool {
  type: ComputerToolType;
  beta?: string;
  zoom: boolean;
}

/** The computer tool of a version, as its row describes it. */
export function computerTool(type: ComputerToolType): ComputerTool {
  const row: ToolTypeRow = TOOL_TYPES[type];
  return { type, ...(row.beta ? { beta: row.beta } : {}), zoom: row.zoom };
}

export function isToolsetType(type: string): type is ToolsetType {
  return type in TOOL_TYPES && TOOL_TYPES[type as ToolType].declared === 'toolset';
}

const COMPUTER_TOOL_TYPES = (Object.keys(TOOL_TYPES) as ToolType[]).filter((type): type is ComputerToolType => TOOL_TYPES[type].kind === 'computer');
/** The computer tool versions that have the `zoom` action. */
export const ZOOM_COMPUTER_TOOL_TYPES: readonly ComputerToolType[] = COMPUTER_TOOL_TYPES.filter((type) => TOOL_TYPES[type].zoom);
