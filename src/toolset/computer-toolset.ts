/**
 * Computer use with `computer_toolset_20260801`, the only computer use tool of the Claude 5.5
 * models: 17 members (`left_click`, `type`, `zoom`, …) called by name with `toolset_name:
 * "computer"`, several per turn, each answered with a short acknowledgment instead of a
 * screenshot. The SDK's toolset class runs the wire rules (acknowledgment texts, the cursor
 * position format, one call at a time); the actions themselves are the same table as the
 * earlier tool's (computer-actions.ts). After a turn that changed the page, the loop attaches
 * one fresh screenshot to its last result (`observe`), as the documentation suggests, which
 * saves the model a `screenshot` call.
 */
import { BetaAbstractComputerToolset20260801, type BetaComputerMemberResult, type BetaToolsetCallContext } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type { BetaComputerMemberInput, BetaComputerMemberName, BetaToolResultBlockParam, BetaToolUseBlock } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { COMPUTER_TOOLSET } from '../domain/action-spaces.js';
import type { ToolResultBlock } from '../model/types.js';
import { executeComputerAction } from './computer-actions.js';
import type { ActionOutcome, DisplayGeometry } from './computer-types.js';
import { capture, changeNotes, errorResult, imageBlock, NAVIGATE_DEFINITION, NAVIGATE_TOOL, runNavigate, screenshotForModel, textBlock } from './results.js';
import { fromSdkResult } from './sdk-results.js';
import { effectOf, readState } from '../domain/element-state.js';
import { traceOf } from './trace.js';
import { runUpload, UPLOAD_HOW, UPLOAD_TOOL, uploadDefinition } from './upload-tool.js';
import type { ActionReport, ActionRunContext, ActionSpace, ActionSpaceOptions, ActionTrace } from './types.js';
import type { ToolUseBlock } from '../contract/recording.js';

/** Actions whose effect on the element they hit is read (element-state.ts). */
const CLICKS = new Set(['left_click', 'double_click', 'triple_click']);

const TOOLSET_NAME = 'computer';
const NOT_EXECUTED = 'Not executed: an earlier computer action in this turn failed.';

export interface ComputerToolsetOptions extends ActionSpaceOptions {
  geometry: DisplayGeometry;
}

interface CallState {
  context: ActionRunContext;
  outcome?: ActionOutcome;
  trace?: ActionTrace;
}

/** The SDK's computer toolset, driven by the computer actions on our browser port. */
class ComputerToolsetDriver extends BetaAbstractComputerToolset20260801 {
  current: CallState | undefined;

  constructor(private readonly options: ComputerToolsetOptions) {
    // The SDK asks for a confirm gate when typing is on; an unattended run has nobody to ask.
    // What may be typed or clicked is bounded elsewhere: by the allow-list and the secrets rules.
    super({ confirm: () => true, toolConfigs: {} });
  }

  protected override async execute(_ctx: BetaToolsetCallContext, name: BetaComputerMemberName, input: BetaComputerMemberInput): Promise<BetaComputerMemberResult> {
    const state = this.current!;
    const { session, geometry } = this.options;
    const call = { action: name, ...(input && typeof input === 'object' ? (input as Record<string, unknown>) : {}) };
    const outcome = await executeComputerAction(call, {
      session,
      geometry,
      toolVersion: COMPUTER_TOOLSET,
      vault: this.options.secrets,
      signal: state.context.signal,
      beforeRun: (planned) => state.context.beforeRun?.(planned),
    });
    state.outcome = outcome;
    if (!outcome.ok) throw new Error(outcome.error);
    if (outcome.counted) await session.settle(state.context.signal);
    if (name === 'cursor_position') {
      const at = session.pointer();
      return geometry.toDisplay(at.x, at.y);
    }
    if (name === 'screenshot') {
      await session.settle(state.context.signal);
      const shot = await screenshotForModel(session, geometry, state.context.signal);
      return { data: shot.data.toString('base64'), mediaType: shot.mediaType };
    }
    if (outcome.image) return { data: outcome.image.data.toString('base64'), mediaType: outcome.image.mediaType };
    return undefined;
  }
}

export function createComputerToolset(options: ComputerToolsetOptions): ActionSpace {
  const { session, geometry } = options;
  const driver = new ComputerToolsetDriver(options);
  const files = (options.inputFiles ?? []).map((f) => f.name);
  return {
    kind: 'computer',
    toolType: COMPUTER_TOOLSET,
    betas: [],
    display: geometry.display,
    guide: [
      'You see the browser through screenshots and act with the computer toolset (mouse and keyboard) and the `navigate` tool (open a URL).',
      'You may send several actions in one turn; they run in order, and the page settles after each. After a turn that changed the page, its last result carries a fresh screenshot.',
    ].join('\n'),
    tools: () => [
      { type: COMPUTER_TOOLSET, ...(driver.configs ? { configs: structuredClone(driver.configs) as Record<string, { enabled?: boolean }> } : {}) },
      NAVIGATE_DEFINITION,
      ...(files.length > 0 ? [uploadDefinition(files)] : []),
    ],
    ...(files.length > 0 ? { uploadHow: UPLOAD_HOW } : {}),
    owns: (call) => call.toolset_name === TOOLSET_NAME || (!call.toolset_name && (call.name === NAVIGATE_TOOL || (call.name === UPLOAD_TOOL && files.length > 0))),
    async run(call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport> {
      const report = await runCall(call, context);
      // Downloads, refused navigations and dialogs since the last call, told with this answer.
      const notes = changeNotes(session, options.secrets.redact, files.length > 0 ? UPLOAD_TOOL : undefined);
      if (notes) report.result.content.push(textBlock(notes));
      return report;
    },
    async opening(signal) {
      await session.settle(signal);
      return [imageBlock(await screenshotForModel(session, geometry, signal))];
    },
    observe: (signal) => capture(session, geometry, signal),
    notExecuted: (call) => errorResult(call, NOT_EXECUTED),
  };

  async function runCall(call: ToolUseBlock, context: ActionRunContext): Promise<ActionReport> {
    if (!call.toolset_name) {
      if (call.name === UPLOAD_TOOL) return runUpload(call, session, geometry, context.signal, context.beforeRun);
      context.beforeRun?.({ label: `navigate ${String((call.input as { url?: unknown } | null)?.url ?? '')}` });
      return runNavigate(call, session, geometry, context.signal);
    }
    const state: CallState = { context };
    const trace = context.trace === false ? undefined : await traceOf(session, call, geometry, context.signal);
    if (trace) state.trace = trace;
    // A click's element, found by its identity, and its states before the click (element-state.ts).
    const tab = session.tab();
    const clicked = trace?.target && tab && CLICKS.has(call.toolset_name ? call.name : String(trace.input.action ?? '')) ? await tab.locate(trace.target, context.signal).catch(() => undefined) : undefined;
    const before = clicked?.ok && tab ? await readState(tab, clicked.value.ref, context.signal) : undefined;
    driver.current = state;
    let wire: BetaToolResultBlockParam;
    try {
      wire = await driver.toolResult(call as BetaToolUseBlock);
    } finally {
      driver.current = undefined;
    }
    if (trace && clicked?.ok && tab) {
      trace.ref = clicked.value.ref;
      const effect = effectOf(before, await readState(tab, clicked.value.ref, context.signal));
      if (effect) trace.effect = effect;
    }
    const result = fromSdkResult(wire);
    const outcome = state.outcome;
    const action = outcome?.action ?? call.name;
    if (!outcome || !outcome.ok) {
      const error = outcome && !outcome.ok ? outcome.error : textOf(result);
      if (outcome?.counted) context.beforeRun?.({ label: outcome.label });
      return { result, action, counted: outcome?.counted ?? false, ok: false, error, label: outcome?.label ?? `${call.name} (refused)`, images: 0, changesPage: false };
    }
    return {
      result,
      action,
      counted: outcome.counted,
      ok: !result.is_error,
      label: outcome.label,
      ...(outcome.point ? { point: outcome.point } : {}),
      images: result.content.filter((b) => b.type === 'image').length,
      changesPage: outcome.counted,
      ...(outcome.counted && state.trace ? { trace: state.trace } : {}),
    };
  }
}

function textOf(result: ToolResultBlock): string {
  return result.content.map((b) => (b.type === 'text' ? b.text : '')).join(' ').trim();
}
