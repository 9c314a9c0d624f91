import { createHash } from 'node:crypto';

/**
 * The Messages API's documented rules, applied by the scripted model server so that every test
 * of the loop meets them (not a looser copy):
 *
 * - **Prefix check** (preserved thinking: Fable 5.1/5.2, Mythos 5.1/5.2, Opus/Sonnet/Haiku 5.5):
 *   each response carries a thinking block whose signature binds it to the model and to what came
 *   before it (`system`, `tools`, every earlier message; cache breakpoints excluded). A request
 *   that sends a block back after any of those changed is refused with the API's 400, unless it
 *   sets `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` (then the block is
 *   dropped and the request goes on).
 * - **Forced tool choice** (`tool_choice` `any` or `tool`): refused with thinking on (every
 *   model), and by Sonnet 5.5 whatever the thinking.
 * - **Tool versions**: `computer_20251124` is refused by the 5.5 models and by Fable/Mythos 5.2;
 *   the toolsets are refused by the models before Opus 4.8.
 * - **Token accounting**: input tokens estimated per block (text 4 characters a token, images
 *   width × height / 750 from their headers), with `context_management` applied as the API
 *   documents it (old tool results cleared, a compaction block summarising what came before it)
 *   and a prompt cache (a request reads the longest prefix an earlier one wrote at a breakpoint).
 * - **Models API**: `GET /v1/models/{id}` answers each known model's capabilities.
 * - **Task budgets** (`output_config.task_budget`, beta `task-budgets-2026-03-13`): the shape
 *   @anthropic-ai/sdk 1.12.0 types (`BetaTokenTaskBudget`: `type: "tokens"`, `total`, optional
 *   `remaining`, nothing else), a `total` of at least 20,000 and a `remaining` within it, the beta
 *   header, and only on the models the task budgets page lists; anything else is the API's 400.
 *
 * The clearing's exact batching is the API's own business; here the oldest results are cleared,
 * past the newest `keep` tool uses, in batches of at least `clear_at_least` tokens counted from
 * the oldest, so the cleared boundary moves in jumps and the cache holds between them.
 */

const PRESERVED_THINKING = /^claude-(fable-5-[12]|mythos-5-[12]|opus-5-5|sonnet-5-5|haiku-5-5)(-|$)/;
const REFUSES_COMPUTER_20251124 = /^claude-(fable-5-2|mythos-5-2|opus-5-5|sonnet-5-5|haiku-5-5)(-|$)/;
/** Models before the toolsets (Opus 4.8). */
const NO_TOOLSETS = /^claude-(opus-4-[0-7]|sonnet-4|haiku-4|opus-4(-\d{8})?$|3-)/;
const NO_CONTEXT_MANAGEMENT = /^claude-3-/;
/** Models that answer a forced tool choice (`any`, `tool`) with a 400 whatever the thinking. */
const REFUSES_FORCED_TOOL_CHOICE = /^claude-sonnet-5-5(-|$)/;
/** The task budgets page's models, a dated id or `-latest` alias of each too. */
const TASK_BUDGET_MODELS = new Set(['fable-5-1', 'mythos-5-1', 'fable-5', 'mythos-5', 'opus-5-5', 'opus-5', 'opus-4-8', 'opus-4-7', 'sonnet-5-5', 'haiku-5-5']);
const TASK_BUDGET_BETA = 'task-budgets-2026-03-13';

const SIGNING_KEY = 'scripted-model-server';

export function hasPreservedThinking(model: string): boolean {
  return PRESERVED_THINKING.test(model);
}

export interface ApiRefusal {
  status: number;
  message: string;
}

type Json = Record<string, unknown>;

/** JSON of a value with every `cache_control` left out: breakpoints may move between requests. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v));
}

/**
 * The hashes a thinking block at message `i` is bound to: `prefixes[i]` covers `system`, `tools`
 * and messages `0..i-1`. One pass over the request (a chain), so a long run stays fast.
 */
function prefixHashes(model: string, body: Json, upTo: number): string[] {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let hash = createHash('sha256').update(SIGNING_KEY).update('\0').update(model).update('\0');
  hash.update(canonical(body.system ?? null)).update('\0').update(canonical(body.tools ?? null));
  const out = [hash.copy().digest('hex')];
  for (let i = 0; i < Math.min(upTo, messages.length); i++) {
    hash = createHash('sha256').update(out[i]!).update(canonical(messages[i]));
    out.push(hash.copy().digest('hex'));
  }
  return out;
}

function sign(prefix: string, thinking: string): string {
  return `sig_${createHash('sha256').update(prefix).update('\0').update(thinking).digest('base64url')}`;
}

/** The thinking block of a response to `body`, bound to its prefix. */
export function thinkingBlock(body: Json, text: string): Json {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const prefixes = prefixHashes(String(body.model ?? ''), body, messages.length);
  return { type: 'thinking', thinking: text, signature: sign(prefixes[messages.length]!, text) };
}

function dropBlock(body: Json): boolean {
  const thinking = body.thinking as { block_binding?: { prefix_mismatch_behavior?: unknown } } | undefined;
  return thinking?.block_binding?.prefix_mismatch_behavior === 'drop_block';
}

/**
 * The prefix check. Returns the refusal, or the paths of the blocks `drop_block` dropped (the
 * accounting keeps them: a few tokens; the request as recorded stays what the client sent).
 */
export function checkPrefix(body: Json): { refusal: ApiRefusal } | { dropped: string[] } {
  const model = String(body.model ?? '');
  const dropped: string[] = [];
  if (!hasPreservedThinking(model) || !Array.isArray(body.messages)) return { dropped };
  const messages = body.messages as Array<{ role?: unknown; content?: unknown }>;
  const prefixes = prefixHashes(model, body, messages.length);
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    const content = message.content as Json[];
    for (let j = 0; j < content.length; j++) {
      const block = content[j]!;
      if (block.type !== 'thinking') continue;
      const text = typeof block.thinking === 'string' ? block.thinking : '';
      const expected = sign(prefixes[i]!, text);
      if (block.signature === expected) continue;
      const where = `messages.${i}.content.${j}`;
      if (!dropBlock(body)) {
        return {
          refusal: {
            status: 400,
            message: `${where}: Invalid \`signature\` in \`thinking\` block. The block is bound to a different conversation. Remove the block, or set \`thinking.block_binding.prefix_mismatch_behavior\` to "drop_block".`,
          },
        };
      }
      dropped.push(where);
    }
  }
  return { dropped };
}

function takesTaskBudget(model: string): boolean {
  const family = /^claude-(.+?)(?:-\d{8}|-latest)?$/.exec(model)?.[1];
  return family !== undefined && TASK_BUDGET_MODELS.has(family);
}

/** `output_config.task_budget` as the SDK types it, on a model that takes it, with its beta. */
function checkTaskBudget(body: Json, betas: readonly string[]): ApiRefusal | undefined {
  const config = body.output_config;
  if (config === undefined || config === null) return undefined;
  if (typeof config !== 'object' || Array.isArray(config)) return { status: 400, message: 'output_config: Input should be a valid dictionary' };
  const budget = (config as Json).task_budget;
  if (budget === undefined || budget === null) return undefined;
  const bad = (message: string): ApiRefusal => ({ status: 400, message: `output_config.task_budget${message}` });
  if (!betas.includes(TASK_BUDGET_BETA)) return bad(`: requires the anthropic-beta header "${TASK_BUDGET_BETA}"`);
  const model = String(body.model ?? '');
  if (!takesTaskBudget(model)) return bad(`: task budgets are not supported by '${model}'`);
  if (typeof budget !== 'object' || Array.isArray(budget)) return bad(': Input should be a valid dictionary');
  const fields = budget as Json;
  const extra = Object.keys(fields).filter((key) => !['type', 'total', 'remaining'].includes(key));
  if (extra.length > 0) return bad(`.${extra[0]}: Extra inputs are not permitted`);
  if (fields.type !== 'tokens') return bad(".type: Input should be 'tokens'");
  const { total, remaining } = fields;
  if (typeof total !== 'number' || !Number.isInteger(total)) return bad('.total: Input should be a valid integer');
  if (total < 20_000) return bad('.total: Input should be greater than or equal to 20000');
  if (remaining !== undefined && remaining !== null) {
    if (typeof remaining !== 'number' || !Number.isInteger(remaining)) return bad('.remaining: Input should be a valid integer');
    if (remaining < 0 || remaining > total) return bad('.remaining: must be between 0 and total');
  }
  return undefined;
}

/** The tool versions a model refuses, context management it does not have, and the task budget's rules. */
export function checkRequestShape(body: Json, betas: readonly string[] = []): ApiRefusal | undefined {
  const budget = checkTaskBudget(body, betas);
  if (budget) return budget;
  const model = String(body.model ?? '');
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  for (const tool of tools) {
    if (tool.type === 'computer_20251124' && REFUSES_COMPUTER_20251124.test(model)) {
      return { status: 400, message: `tools: '${model}' does not support the tool type 'computer_20251124'; use 'computer_toolset_20260801'` };
    }
    if ((tool.type === 'computer_toolset_20260801' || tool.type === 'browser_toolset_20260801') && NO_TOOLSETS.test(model)) {
      return { status: 400, message: `tools: '${model}' does not support the tool type '${String(tool.type)}'` };
    }
  }
  if (body.context_management && NO_CONTEXT_MANAGEMENT.test(model)) {
    return { status: 400, message: `context_management: not supported by '${model}'` };
  }
  // Extended thinking allows tool_choice "auto" and "none" only; Sonnet 5.5 takes no forced choice at all.
  const choice = (body.tool_choice as Json | undefined)?.type;
  const thinking = (body.thinking as Json | undefined)?.type;
  if ((choice === 'any' || choice === 'tool') && REFUSES_FORCED_TOOL_CHOICE.test(model)) {
    return { status: 400, message: `tool_choice: '${model}' does not support forced tool use ('${String(choice)}'); use 'auto' or 'none'` };
  }
  if ((choice === 'any' || choice === 'tool') && (thinking === 'enabled' || thinking === 'adaptive')) {
    return { status: 400, message: 'Thinking may not be enabled when tool_choice forces tool use.' };
  }
  return undefined;
}

/** `GET /v1/models/{id}`: the capabilities of the models this fake knows, by id prefix. */
export function modelInfo(id: string): Json | undefined {
  if (!/^claude-(fable|mythos|opus|sonnet|haiku)-[45]/.test(id) && !id.startsWith('claude-3-')) return undefined;
  const newest = !NO_TOOLSETS.test(id);
  const managed = !NO_CONTEXT_MANAGEMENT.test(id);
  const yes = { supported: true };
  const no = { supported: false };
  return {
    type: 'model',
    id,
    display_name: id,
    created_at: '2026-11-09T00:00:00Z',
    lifecycle: 'active',
    deprecated_at: null,
    retires_at: null,
    line: null,
    max_input_tokens: /^claude-(fable|mythos)-/.test(id) ? 1_000_000 : 200_000,
    max_tokens: 128_000,
    capabilities: {
      batch: yes,
      citations: yes,
      code_execution: yes,
      image_input: yes,
      pdf_input: yes,
      structured_outputs: yes,
      server_tools: { supported: true, code_execution: yes, web_search: yes },
      effort: { supported: newest, low: yes, medium: yes, high: yes, max: yes, xhigh: null },
      context_management: {
        supported: managed,
        clear_tool_uses_20250919: managed ? yes : no,
        clear_thinking_20251015: managed ? yes : no,
        compact_20260112: newest ? yes : no,
      },
      thinking: { supported: true, types: { adaptive: newest ? yes : no, enabled: newest ? no : yes, disabled: yes, between_tools: no } },
    },
  };
}
