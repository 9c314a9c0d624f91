/**
 * Billed-token equivalent of a scripted 50-step run: our context window (screenshots dropped
 * in chunks, rolling cache breakpoints) against keeping every screenshot with no caching.
 *
 * The prompt cache is modelled as the API documents it: a request reads the longest prefix
 * that an earlier request wrote at one of its breakpoints, writes from there to its own last
 * breakpoint, and pays full price for the rest. Billed input = uncached + 0.1 × reads +
 * 1.25 × writes. Output tokens are the same in both runs and left out.
 */
import { prepareMessages } from '../src/agent/context-window.js';
import type { ImageBlock, Message } from '../src/model/types.js';

/** A 1280×800 screenshot costs about width × height / 750 tokens. */
const IMAGE_TOKENS = Math.round((1280 * 800) / 750);
/** System prompt, the three tools and the computer tool's own system text. */
const SYSTEM_AND_TOOLS_TOKENS = 2_000;
/** One assistant turn: a sentence and a tool call. */
const ASSISTANT_TOKENS = 80;
const TEXT_TOKENS = 20;

function buildHistory(steps: number): Message[][] {
  const snapshots: Message[][] = [];
  const history: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'begin' }, image()] }];
  snapshots.push([...history]);
  for (let i = 0; i < steps - 1; i++) {
    history.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'computer', input: { action: 'left_click', coordinate: [i, i] } }] });
    history.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: [image(i)] }] });
    snapshots.push([...history]);
  }
  return snapshots;
}

function image(i = -1): ImageBlock {
  return { type: 'image', source: { type: 'base64', media_type: 'image/png', data: `shot-${i}` } };
}

/** Blocks of a request as (identity, tokens, breakpoint?) in prompt order. */
function flatten(messages: Message[], cached: boolean): Array<{ id: string; tokens: number; breakpoint: boolean }> {
  const out = [{ id: 'system+tools', tokens: SYSTEM_AND_TOOLS_TOKENS, breakpoint: cached }];
  for (const m of messages) {
    for (const b of m.content) {
      const raw = JSON.stringify(b);
      const breakpoint = cached && raw.includes('cache_control');
      const id = raw.replace(/,"cache_control":\{"type":"ephemeral"\}/g, '');
      let tokens = m.role === 'assistant' ? ASSISTANT_TOKENS : TEXT_TOKENS;
      const images = (raw.match(/"type":"image"/g) ?? []).length;
      tokens += images * IMAGE_TOKENS;
      out.push({ id, tokens, breakpoint });
    }
  }
  return out;
}

export function benchTokens(steps = 50): Record<string, number> {
  const snapshots = buildHistory(steps);
  const written = new Set<string>();
  let ours = 0;
  let oursRaw = 0;
  let reads = 0;
  let writes = 0;
  let baseline = 0;
  for (const history of snapshots) {
    baseline += flatten(history, false).reduce((sum, b) => sum + b.tokens, 0);
    const blocks = flatten(prepareMessages(history), true);
    let prefix = '';
    let offset = 0;
    let read = 0;
    let lastBreakpoint = 0;
    const prefixes: Array<{ key: string; at: number }> = [];
    for (const b of blocks) {
      prefix += `|${b.id}`;
      offset += b.tokens;
      if (written.has(prefix)) read = offset;
      if (b.breakpoint) {
        lastBreakpoint = offset;
        prefixes.push({ key: prefix, at: offset });
      }
    }
    const total = offset;
    const write = Math.max(0, lastBreakpoint - read);
    for (const p of prefixes) written.add(p.key);
    reads += read;
    writes += write;
    oursRaw += total;
    ours += total - read - write + 0.1 * read + 1.25 * write;
  }
  return {
    steps,
    billedTokensOurs: Math.round(ours),
    billedTokensKeepEverything: baseline,
    ratio: Math.round((ours / baseline) * 1000) / 1000,
    promptTokensSentOurs: oursRaw,
    cacheReadTokens: reads,
    cacheWriteTokens: writes,
  };
}
