/**
 * Computer use with the earlier tool versions (`computer_20251124`, `computer_20250124`), for
 * the models that take nothing newer: one `computer` tool whose input names the action, our
 * `navigate` tool beside it, and a fresh screenshot in the answer to every action that can
 * change the screen.
 */
import type { SingleComputerToolType } from '../domain/action-spaces.js';
import { executeComputerAction } from './computer-actions.js';
import type { DisplayGeometry } from './computer-types.js';
import { capture, changeNotes, errorResult, imageBlock, NAVIGATE_DEFINITION, NAVIGATE_TOOL, resultFor, runNavigate, screenshotForModel, textBlock } from './results.js';
import { runUpload, UPLOAD_HOW, UPLOAD_TOOL, uploadDefinition } from './upload-tool.js';
import type { ActionReport, ActionRunContext, ActionSpace, ActionSpaceOptions } from './types.js';
import { traceOf } from './trace.js';
import type { ToolUseBlock } from '../contract/recording.js';

export const COMPUTER_TOOL = 'computer';

export interface ComputerToolOptions extends ActionSpaceOptions {
  version: SingleComputerToolType;
  beta: string;
  zoom: boolean;
  geometry: DisplayGeometry;
}

export function createComputerTool(options: ComputerToolOptions): ActionSpace {
  const { session, geometry, version } = options;
  const files = (options.inputFiles ?? []).map((f) => f.name);
  const run = async (call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport> => {
    if (call.name === NAVIGATE_TOOL) {
      context.beforeRun?.({ label: `navigate ${String((call.input as { url?: unknown } | null)?.url ?? '')}` });
      return runNavigate(call, session, geometry, context.signal);
    }
    if (call.name === UPLOAD_TOOL) return runUpload(call, session, geometry, context.signal, context.beforeRun);
    return runComputer(call, context);
  };
  return {
    kind: 'computer',
    toolType: version,
    betas: [options.beta],
    display: geometry.display,
    guide: [
      'You see the browser through screenshots and act with the `computer` tool (mouse and keyboard) and the `navigate` tool (open a URL).',
      'Each action returns a fresh screenshot once the page has settled, so there is no need to wait or take extra screenshots after acting.',
    ].join('\n'),
    tools: () => [
      {
        type: version,
        name: COMPUTER_TOOL,
        display_width_px: geometry.display.width,
        display_height_px: geometry.display.height,
        ...(version === 'computer_20251124' && options.zoom ? { enable_zoom: true } : {}),
      },
      NAVIGATE_DEFINITION,
      ...(files.length > 0 ? [uploadDefinition(files)] : []),
    ],
    ...(files.length > 0 ? { uploadHow: UPLOAD_HOW } : {}),
    owns: (call) => !call.toolset_name && (call.name === COMPUTER_TOOL || call.name === NAVIGATE_TOOL || (call.name === UPLOAD_TOOL && files.length > 0)),
    async run(call, context) {
      const report = await run(call, context);
      // Downloads, refused navigations and dialogs since the last call, told with this answer.
      const notes = changeNotes(session, options.secrets.redact, files.length > 0 ? UPLOAD_TOOL : undefined);
      if (notes) report.result.content.push(textBlock(notes));
      return report;
    },
    async opening(signal) {
      await session.settle(signal);
      return [imageBlock(await screenshotForModel(session, geometry, signal))];
    },
    notExecuted: (call) => errorResult(call, 'Not executed: an earlier action in this turn failed.'),
  };

  async function runComputer(call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport> {
    let marked = false;
    const before = context.trace === false ? undefined : await traceOf(session, call, geometry, context.signal);
    const outcome = await executeComputerAction(call.input, {
      session,
      geometry,
      toolVersion: version,
      vault: options.secrets,
      signal: context.signal,
      beforeRun: (planned) => {
        marked = true;
        context.beforeRun?.(planned);
      },
    });
    if (!outcome.ok) {
      // Refused actions never ran: they are marked where they were refused.
      if (outcome.counted && !marked) context.beforeRun?.({ label: outcome.label });
      return { result: errorResult(call, outcome.error), action: outcome.action, counted: outcome.counted, ok: false, error: outcome.error, label: outcome.label, images: 0, changesPage: false };
    }
    const content = [];
    if (outcome.text) content.push(textBlock(outcome.text));
    let images = 0;
    if (outcome.image) {
      content.push(imageBlock(outcome.image));
      images++;
    } else if (outcome.wantsScreenshot) {
      content.push(await capture(session, geometry, context.signal));
      images++;
    }
    return {
      result: resultFor(call, content),
      action: outcome.action,
      counted: outcome.counted,
      ok: true,
      label: outcome.label,
      ...(outcome.point ? { point: outcome.point } : {}),
      images,
      changesPage: outcome.counted,
      ...(outcome.counted && before ? { trace: before } : {}),
    };
  }
}
