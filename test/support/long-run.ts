import { runAgent } from '../../src/agent/loop.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import type { RunBudget } from '../../src/domain/usage.js';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import { createModelPricing } from '../../src/model/prices.js';
import { meterModel } from '../../src/runner/usage-meter.js';
import type { ContextSettings } from '../../src/model/context-policy.js';
import type { ActionSpaceKind } from '../../src/domain/action-spaces.js';
import { chooseActionSpace } from '../../src/model/tool-versions.js';
import type { ImageBlock, ToolResultBlock, ToolResultContent } from '../../src/model/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionReport, ActionSpace } from '../../src/toolset/types.js';
import { createFakeSession } from './fake-session.js';
import { heardEvents } from './heard-events.js';
import { encodePng } from './png.js';
import { computer, finish, memberBlock, startScriptedModelServer, turn, type RecordedRequest, type ScriptedModelServer, type ScriptedModelServerOptions, type ScriptedTurn } from './scripted-model-server.js';
import { countEvents, type RunCounters } from '../../src/execution/counters.js';
import type { AgentOutcome } from '../../src/execution/outcome.js';

/**
 * A long run of the real loop and the real Anthropic client against the scripted model server
 * (which applies the API's rules and counts tokens), on a synthetic browser: each action answers
 * what its action space answers on a real page, with full-size screenshots (1280×800) and, in the
 * browser toolset, long page reads. Tokens and the conversation's shape are what a real run has;
 * only the pixels are made up. Used by the long-run tests and `npm run bench -- tokens`.
 */

export interface LongRunOptions {
  model: string;
  space: ActionSpaceKind;
  /** Model turns, the last one calling finish. */
  turns: number;
  contextSettings?: ContextSettings;
  server?: ScriptedModelServerOptions;
  /** The worker's client sees an override instead of asking the Models API. */
  capabilityOverrides?: Record<string, Record<string, unknown>>;
  /** The run's caps (docs/specification.md#budget). */
  budget?: RunBudget;
}

export interface LongRun {
  outcome: AgentOutcome;
  stats: RunCounters;
  server: ScriptedModelServer;
  events: Array<{ type: string; fields: Record<string, unknown> }>;
  logLines: string[];
  /** Input tokens of each request as the API counted them (after context management). */
  requestTokens: number[];
}

const WIDTH = 1280;
const HEIGHT = 800;
const PAGE_TEXT = 'Order #1042 · 3 items · Shipping to 12 Harbour Street. '.repeat(110);
const shots: string[] = [];
const shot = (n: number) => (shots[n % 8] ??= encodePng(WIDTH, HEIGHT, n % 8).toString('base64'));

/** The model's side: one action per turn in the space its tools name, then finish. */
export function longRunScript(turns: number) {
  return (request: RecordedRequest, index: number): ScriptedTurn => {
    if (index >= turns - 1) return finish('completed', { turns });
    const tools = ((request.body as { tools?: Array<{ type?: string }> }).tools ?? []).map((t) => t.type);
    const point = { x: 100 + (index % 10) * 40, y: 200 + (index % 7) * 30 };
    if (tools.includes('browser_toolset_20260801')) {
      return turn(index % 3 === 2 ? memberBlock('get_page_text') : index % 3 === 1 ? memberBlock('screenshot') : memberBlock('left_click', { target: { type: 'coordinate', ...point } }));
    }
    if (tools.includes('computer_toolset_20260801')) return turn(memberBlock('left_click', { coordinate: [point.x, point.y] }, 'computer'));
    return computer('left_click', { coordinate: [point.x, point.y] });
  };
}

/** The action space's own tools, guide and rules; its calls answered as on a real page. */
function syntheticSpace(real: ActionSpace): ActionSpace {
  let n = 0;
  const image = (): ImageBlock => ({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: shot(++n) } });
  const state: ToolResultContent = { type: 'browser_state', tabs: [{ tab_id: 'tab_1', title: 'Orders', url: 'https://shop.test/orders', active: true }] };
  const answer = (call: Parameters<ActionSpace['run']>[0]): ToolResultContent[] => {
    if (real.kind === 'browser') {
      if (call.name === 'screenshot') return [image(), state];
      if (call.name === 'get_page_text') return [{ type: 'text', text: PAGE_TEXT }, state];
      return [state];
    }
    // The computer toolset answers actions with text (the loop then adds one look); the earlier tool with a screenshot.
    return call.toolset_name ? [{ type: 'text', text: `clicked at (${JSON.stringify(call.input)})` }] : [image()];
  };
  return {
    ...real,
    tools: () => real.tools(),
    owns: (call) => real.owns(call),
    notExecuted: (call) => real.notExecuted(call),
    async run(call): Promise<ActionReport> {
      const content = answer(call);
      const result: ToolResultBlock = { type: 'tool_result', tool_use_id: call.id, content, ...(call.toolset_name ? { toolset_name: call.toolset_name } : {}) };
      return { result, action: call.name, counted: true, ok: true, label: call.name, images: content.filter((b) => b.type === 'image').length, changesPage: call.name === 'left_click' };
    },
    opening: async () => [image()],
    ...(real.observe ? { observe: async () => image() } : {}),
  };
}

function silentLogger(lines: string[] = []): Logger {
  const write = (level: string) => (obj: Record<string, unknown>, msg?: string) => void lines.push(JSON.stringify({ level, ...obj, msg }));
  const logger: Logger = { debug: () => undefined, info: write('info'), warn: write('warn'), error: write('error'), child: () => logger };
  return logger;
}

export async function longRun(opts: LongRunOptions): Promise<LongRun> {
  const server = await startScriptedModelServer(longRunScript(opts.turns), opts.server);
  const logLines: string[] = [];
  const { events: stream, lines: events } = heardEvents();
  const stats = countEvents(stream);
  try {
    const chosen = chooseActionSpace(opts.model, opts.space);
    if (!chosen.ok) throw new Error(chosen.reason);
    const session = createFakeSession({ width: WIDTH, height: HEIGHT });
    const vault = createSecretVault({}, undefined);
    const real = createActionSpace({ kind: chosen.kind, computer: chosen.tools.computer, images: chosen.tools.images }, { session, secrets: vault, allowJavascript: false });
    const client = createAnthropicModel({
      apiKey: 'sk-ant-long-run',
      baseURL: server.url,
      maxRetries: 0,
      logger: silentLogger(logLines),
      ...(opts.contextSettings ? { contextSettings: opts.contextSettings } : {}),
      ...(opts.capabilityOverrides ? { capabilityOverrides: opts.capabilityOverrides } : {}),
    });
    // As the runner composes it: every request counted and priced, the budget held (runner/usage-meter.ts).
    const model = meterModel(client, { counters: stats, budget: opts.budget ?? {}, pricing: createModelPricing(), events: stream });
    const outcome: AgentOutcome = await runAgent(
      { model, space: syntheticSpace(real), session, events: stream },
      {
        spec: { prompt: 'Go through the open orders one by one.', allowedDomains: ['shop.test'] },
        modelId: opts.model,
        vault,
        maxSteps: opts.turns,
        ...(opts.budget ? { budget: opts.budget } : {}),
        startUrl: 'https://shop.test/orders',
        signal: new AbortController().signal,
      },
      stats,
    ).catch((error: unknown) => {
      // A run its budget stopped ends as the runner reports it: failed, with the meter's reason.
      if (error instanceof ExecutionError && error.code === 'budget_exceeded') return { status: 'failed', code: error.code, message: error.message };
      throw error;
    });
    const requestTokens = server.accounting.map((a) => a?.total ?? 0);
    return { outcome, stats, server, events, logLines, requestTokens };
  } finally {
    // Refusals are the caller's to assert (the bench reports them): not a failure to stop.
    await server.stop().catch(() => undefined);
  }
}
