/**
 * The output and the final page (docs/run-cache.md#replay): where each value of a completed run's
 * output showed, kept with the cache; and the output of a replay re-read from the same places.
 * Every read goes through the page reader port.
 */
import type { AgentInput } from '../agent/loop.js';
import type { OutputSource, RunCacheEntry } from '../domain/run-cache.js';
import { fillText, templateText, type InputLeaf } from '../domain/run-cache-values.js';
import type { PageReader } from './types.js';

/** Longest output value searched for on the final page, and how many places are considered. */
const OUTPUT_VALUE_MAX_CHARS = 500;

export type OutputRecipe = NonNullable<RunCacheEntry['output']>;

/** Where each value of the output shows on the final page; undefined when one cannot be found. */
export async function outputSources(page: PageReader | undefined, output: unknown, values: InputLeaf[], signal: AbortSignal): Promise<OutputRecipe | undefined> {
  if (!page) return undefined;
  const leaves: Array<{ path: string; value: string | number }> = [];
  let readable = true;
  const walk = (value: unknown, path: string[]) => {
    if (typeof value === 'string' || typeof value === 'number') leaves.push({ path: path.join('.'), value });
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    // true, false and null are not read from a page: this output needs the model.
    else readable = false;
  };
  walk(output, []);
  if (!readable || leaves.length === 0) return undefined;
  const sources: OutputSource[] = [];
  for (const leaf of leaves) {
    const text = String(leaf.value);
    if (text.length === 0 || text.length > OUTPUT_VALUE_MAX_CHARS) return undefined;
    const [found] = await page.findText(text, 3, signal).catch(() => []);
    if (!found) return undefined;
    const at = found.text.indexOf(text);
    sources.push({
      path: leaf.path,
      kind: typeof leaf.value === 'number' ? 'number' : 'string',
      element: { ...found.identity, name: '' },
      before: templateText(found.text.slice(Math.max(0, at - 40), at), values),
      after: templateText(found.text.slice(at + text.length, at + text.length + 40), values),
    });
  }
  return { sources, shape: skeleton(output) };
}

/** The output with every leaf emptied: the shape the new values are put into. */
function skeleton(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(skeleton);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, skeleton(v)]));
  return null;
}

export type OutputRead = { ok: true; output: unknown } | { ok: false; reason: string };

/** The output re-read from the final page where the cached run found it, validated; or why not. */
export async function readOutput(page: PageReader | undefined, recipe: OutputRecipe, input: Pick<AgentInput, 'vault' | 'validateOutput' | 'signal'>): Promise<OutputRead> {
  if (!page) return { ok: false, reason: 'no open tab' };
  const output = structuredClone(recipe.shape);
  for (const source of recipe.sources) {
    const text = await page.readText(source.element, input.signal);
    if (text === null) return { ok: false, reason: `the ${source.element.role} the output ${source.path} was read from is not on the page` };
    const before = fillText(source.before, input.vault.maskedPayload, input.vault.paths);
    const after = fillText(source.after, input.vault.maskedPayload, input.vault.paths);
    const start = before ? text.indexOf(before) : 0;
    if (start < 0) return { ok: false, reason: `the text around ${source.path} changed` };
    const from = start + before.length;
    const end = after ? text.indexOf(after, from) : text.length;
    if (end < 0) return { ok: false, reason: `the text around ${source.path} changed` };
    const raw = text.slice(from, end).trim();
    if (raw === '') return { ok: false, reason: `no value for ${source.path}` };
    const value = source.kind === 'number' ? Number(raw.replace(/[^\d.+-eE]/g, '')) : raw;
    if (typeof value === 'number' && !Number.isFinite(value)) return { ok: false, reason: `${source.path} is not a number on the page` };
    setPath(output, source.path, input.vault.redact(String(value)) === String(value) ? value : undefined);
  }
  if (input.validateOutput) {
    const check = await input.validateOutput(output);
    if (!check.ok) return { ok: false, reason: `the output read from the page does not match the output schema: ${check.errors}` };
  }
  return { ok: true, output };
}

/** The page's text for a model asked to read the output itself (up to 10,000 characters), redacted. */
export async function pageTextFor(page: PageReader | undefined, redact: (text: string) => string, signal: AbortSignal): Promise<string> {
  const read = await page?.pageText(10_000, signal).catch(() => undefined);
  return read ? redact(read.text) : '';
}

function setPath(target: unknown, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys[keys.length - 1]!] = value;
}
