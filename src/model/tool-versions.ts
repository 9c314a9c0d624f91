/**
 * Which version of Anthropic's computer-use tool a model speaks (contract §10).
 *
 * Source: Anthropic's computer-use tool reference. `computer_20251124` (beta
 * `computer-use-2025-11-24`, adds the `zoom` action behind `enable_zoom`) is documented for
 * Claude Opus 4.5, Opus 4.6, Sonnet 4.6 and Opus 4.7; `computer_20250124` (beta
 * `computer-use-2025-01-24`) for Sonnet 4.5, Haiku 4.5, Opus 4.1, Sonnet 4, Opus 4 and
 * Sonnet 3.7. Models newer than those (Opus 4.8, the 5.x families, Mythos, Fable, …) are
 * given the newest version: each model generation so far has kept or advanced the tool.
 *
 * Ids are matched by family prefix so that dated ids (`claude-sonnet-4-5-20250929`) and
 * `-latest` aliases resolve like their family. The first matching row wins.
 */

export type ComputerToolVersion = 'computer_20250124' | 'computer_20251124';

export interface ComputerToolSpec {
  version: ComputerToolVersion;
  /** The `anthropic-beta` flag the request must carry for this tool version. */
  beta: string;
  /** Whether the tool definition may set `enable_zoom` (the `zoom` action). */
  supportsZoom: boolean;
}

const NEWEST: ComputerToolSpec = { version: 'computer_20251124', beta: 'computer-use-2025-11-24', supportsZoom: true };
const PREVIOUS: ComputerToolSpec = { version: 'computer_20250124', beta: 'computer-use-2025-01-24', supportsZoom: false };

/** Model-id prefix → tool. Order matters only where one prefix extends another. */
const TABLE: ReadonlyArray<readonly [prefix: string, spec: ComputerToolSpec]> = [
  // Documented on the newest tool.
  ['claude-opus-4-5', NEWEST],
  ['claude-opus-4-6', NEWEST],
  ['claude-sonnet-4-6', NEWEST],
  ['claude-opus-4-7', NEWEST],
  // Documented on the previous tool.
  ['claude-sonnet-4-5', PREVIOUS],
  ['claude-haiku-4-5', PREVIOUS],
  ['claude-opus-4-1', PREVIOUS],
  // `claude-opus-4` and `claude-sonnet-4` (with or without a date) are the original Claude 4
  // models; their `-4-N` successors are matched by the rows above.
  ['claude-opus-4-0', PREVIOUS],
  ['claude-sonnet-4-0', PREVIOUS],
  ['claude-3-7-sonnet', PREVIOUS],
  // Older models never had either tool; the previous one is the closest they understand.
  ['claude-3-', PREVIOUS],
];

/** `claude-opus-4-20250514` / `claude-sonnet-4-20250514`: Claude 4 with a date, no minor. */
const CLAUDE_4_DATED = /^claude-(opus|sonnet)-4(-\d{8})?$/;

/**
 * The computer tool version, beta flag and zoom support for a model id. Unknown ids (newer
 * `claude-*` models, or ids of a compatible proxy) get the newest version.
 */
export function toolVersionFor(model: string): ComputerToolSpec {
  const id = model.trim().toLowerCase();
  if (CLAUDE_4_DATED.test(id)) return { ...PREVIOUS };
  for (const [prefix, spec] of TABLE) {
    if (id === prefix || id.startsWith(`${prefix}-`) || (prefix.endsWith('-') && id.startsWith(prefix))) {
      return { ...spec };
    }
  }
  return { ...NEWEST };
}
