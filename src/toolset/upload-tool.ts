/**
 * `upload_file`: how computer use gives a page an input file (docs/files-and-codes.md). The page's file
 * chooser never opens a dialog: clicking an upload control leaves it pending, and this tool
 * answers it with files chosen by name. With a coordinate it fills the file input there instead.
 * The session turns names into files; nothing else of the worker's disk can reach a page.
 */
import type { BrowserSession } from '../browser/types.js';
import type { ToolDefinition } from '../model/types.js';
import type { DisplayGeometry } from './computer-types.js';
import { capture, errorResult, refused, resultFor, textBlock } from './results.js';
import type { ActionReport } from './types.js';
import type { ToolUseBlock } from '../contract/recording.js';

export const UPLOAD_TOOL = 'upload_file';

export const UPLOAD_HOW =
  'To upload one, click the page\'s upload control (its file chooser opens in the background, no dialog), then call `upload_file` with the file names; or call it with the coordinate of the file input.';

export function uploadDefinition(names: readonly string[]): ToolDefinition {
  return {
    name: UPLOAD_TOOL,
    description:
      "Give input files of this execution to the page: to the file chooser the page opened (after a click on its upload control), or to the file input at `coordinate`. Only the execution's input files can be chosen, by name.",
    input_schema: {
      type: 'object',
      properties: {
        names: { type: 'array', items: { type: 'string', enum: [...names] }, minItems: 1, description: 'Names of input files.' },
        coordinate: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2, description: 'The file input, in screenshot pixels (optional).' },
      },
      required: ['names'],
      additionalProperties: false,
    },
  };
}

export async function runUpload(call: ToolUseBlock, session: BrowserSession, geometry: DisplayGeometry, signal: AbortSignal, beforeRun?: (planned: { label: string; point?: { x: number; y: number } }) => void): Promise<ActionReport> {
  const input = (call.input && typeof call.input === 'object' ? call.input : {}) as { names?: unknown; coordinate?: unknown };
  const names = Array.isArray(input.names) ? input.names.filter((n): n is string => typeof n === 'string') : [];
  if (names.length === 0) return refused(call, UPLOAD_TOOL, true, 'names must list at least one input file');
  let target: { kind: 'chooser' } | { kind: 'point'; x: number; y: number } = { kind: 'chooser' };
  if (input.coordinate !== undefined) {
    const c = input.coordinate;
    if (!Array.isArray(c) || c.length !== 2 || !c.every((n) => typeof n === 'number' && Number.isFinite(n))) return refused(call, UPLOAD_TOOL, true, 'coordinate must be [x, y]');
    target = { kind: 'point', ...geometry.toViewport(c[0] as number, c[1] as number) };
  }
  const label = `upload_file ${names.map((n) => JSON.stringify(n)).join(', ')}`;
  beforeRun?.({ label, ...(target.kind === 'point' ? { point: { x: target.x, y: target.y } } : {}) });
  const given = await session.setInputFiles(names, target, signal);
  const base = { action: UPLOAD_TOOL, counted: true, label, trace: { tool: UPLOAD_TOOL, input: { ...input }, url: session.currentUrl() } };
  if (!given.ok) return { ...base, result: errorResult(call, given.error), ok: false, error: given.error, images: 0, changesPage: false };
  const shot = await capture(session, geometry, signal);
  return { ...base, result: resultFor(call, [textBlock(`Chose ${given.names.join(', ')}.`), shot]), ok: true, images: 1, changesPage: true };
}
