/**
 * The run cache on a block editor (docs/run-cache.md#effects, #read-back-by-identity): a post
 * editor built on ProseMirror from npm (test/support/real-apps/block-editor.ts), driven through
 * the daemon (BullMQ and the run cache in real Redis, Chromium, the SDK against a scripted model
 * that acts on what the worker shows it). Its sidebar panels open as the user left them (the
 * server keeps it), its paragraph blocks are named "Empty block; …" until typed into, and its
 * post-publish panel shows neither the body nor the tags: the server's record of the post is
 * what each test asserts.
 */
import { rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../support/env.js';
import { startRecordingApi, type RecordingApi } from '../../support/recording-api.js';
import { startRedis, type TestRedis } from '../../support/redis.js';
import { postAgent, postWorkflow, type PostInput, FIRST_POST as FIRST, SECOND_POST as SECOND } from '../../support/real-apps/block-editor-agent.js';
import { startBlockEditor, type BlockEditor } from '../../support/real-apps/block-editor.js';
import { startRealAppWorker, type FinishedRun, type RealAppWorker } from '../../support/real-apps/worker-daemon.js';

let redis: TestRedis;
let api: RecordingApi;
let editor: BlockEditor;
let dir: string;
let worker: RealAppWorker;

beforeAll(async () => {
  [redis, api, editor, dir] = await Promise.all([startRedis(), startRecordingApi(), startBlockEditor(), tempDir('block-editor')]);
  worker = await startRealAppWorker({ redisUrl: redis.url, api, hostRules: editor.hostRules, dir });
}, 240_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.allSettled([redis?.stop(), api?.close(), editor?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});


interface Written {
  run: FinishedRun;
  explain: string;
}

async function write(versionId: string, input: PostInput): Promise<Written> {
  const agent = postAgent(input);
  const posts = editor.posts.length;
  const run = await worker.run({ workflowVersionId: versionId, inputPayload: input, specification: postWorkflow(editor.origin, editor.host) }, agent.script);
  const actions = run.events.filter((e) => e.type === 'action').map((e) => `${String(e.by)}: ${String(e.label ?? e.action)}${e.ok === false ? ` (failed: ${String(e.error)})` : ''}`);
  const explain = `agent: ${agent.log.turns.join(' → ')}\noutput.json: ${JSON.stringify({ status: run.output.status, output: run.output.output, error: run.output.error, cache: run.output.cache })}\nactions:\n${actions.join('\n')}\nposts: ${JSON.stringify(editor.posts.slice(posts))}\nlast read: ${agent.log.lastSeen.slice(-1500)}`;
  return { run, explain };
}

const saved = (input: PostInput) => ({ title: input.title, paragraphs: input.paragraphs, categories: [input.category], tags: input.tags });

/** The first run, with the model: it publishes the input's post, and the run becomes the cache. */
async function record(versionId: string, input: PostInput): Promise<Written> {
  const first = await write(versionId, input);
  expect(first.run.output, first.explain).toMatchObject({ status: 'completed', cache: { used: false } });
  expect(editor.posts.at(-1), first.explain).toEqual(saved(input));
  expect(first.run.events.some((e) => e.type === 'run_cache_saved'), first.explain).toBe(true);
  return first;
}

/** A repeat: completed with exactly the new input saved, or failed; never completed with another record. */
async function repeat(versionId: string, input: PostInput): Promise<Written> {
  const posts = editor.posts.length;
  const second = await write(versionId, input);
  expect(second.run.output.cache, second.explain).toMatchObject({ used: true });
  if (second.run.output.status === 'completed') {
    expect(editor.posts.slice(posts), second.explain).toEqual([saved(input)]);
  }
  return second;
}

function passedOver(run: FinishedRun): string[] {
  return run.events.filter((e) => e.type === 'replay_passed_over').map((e) => String(e.action));
}

function figures(label: string, run: FinishedRun): string {
  return `${label}: ${run.requests.length} requests, ${run.inputTokens} input tokens, ${(run.wallMs / 1000).toFixed(1)} s`;
}

describe('a replay on a block editor', () => {
  it('passes over the panel toggles the app already has open, repeats a new input in ≤ 2 requests and ≤ 0.15× the tokens, and costs no more when the panels start closed', { timeout: 900_000 }, async () => {
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    const first = await record('v-effects', FIRST);
    // The first run opened both panels; the app remembers it for this user.
    expect(editor.prefs, first.explain).toEqual({ categories: true, tags: true });

    const second = await repeat('v-effects', SECOND);
    expect(second.run.output.status, second.explain).toBe('completed');
    // The toggles are passed over, not clicked: the panels stay open.
    expect(passedOver(second.run), second.explain).toEqual(['left_click on button "Categories"', 'left_click on button "Tags"']);
    expect(editor.prefs, second.explain).toEqual({ categories: true, tags: true });
    expect(second.run.requests.length, second.explain).toBeLessThanOrEqual(2);
    expect(second.run.inputTokens, second.explain).toBeLessThanOrEqual(0.15 * first.run.inputTokens);

    // The panels start closed this time: the toggles are clicked, as the earlier run found them.
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    const third = await repeat('v-effects', FIRST);
    expect(third.run.output.status, third.explain).toBe('completed');
    expect(passedOver(third.run), third.explain).toEqual([]);
    expect(editor.prefs, third.explain).toEqual({ categories: true, tags: true });
    expect(third.run.requests.length, third.explain).toBeLessThanOrEqual(second.run.requests.length);
    expect(third.run.inputTokens, third.explain).toBeLessThanOrEqual(0.15 * first.run.inputTokens);
    console.log([figures('block editor, first run', first.run), figures('repeat, new input, panels open', second.run), figures('repeat, panels closed', third.run)].join('\n'));
  });

  it('repeats right when the panels start closed where the cached run found them open: their steps repaired once, then the cache costs 1 request either way', { timeout: 900_000 }, async () => {
    // The first run finds both panels open: it clicks no toggle.
    editor.prefs.categories = true;
    editor.prefs.tags = true;
    const first = await record('v-open-first', FIRST);
    expect(first.run.events.filter((e) => e.type === 'action' && /on button "(Categories|Tags)"/.test(String(e.label ?? ''))), first.explain).toEqual([]);
    const second = await repeat('v-open-first', SECOND);
    expect(second.run.output.status, second.explain).toBe('completed');
    expect(second.run.requests.length, second.explain).toBe(1);

    // Closed this time: the category's and the tags' fields are not on the page. Each of those
    // steps is repaired (the panel opened, the value entered by name); none is passed over, and
    // the post is published with every value (repeat() asserts the record).
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    const third = await repeat('v-open-first', FIRST);
    expect(third.run.output.status, third.explain).toBe('completed');
    expect(third.run.output.cache, third.explain).toMatchObject({ repairedSteps: 2, fallbackAtStep: null });
    expect(third.run.requests.length, third.explain).toBeLessThanOrEqual(5);

    // The repaired run is the cache now, its toggle clicks with their effects: open panels are
    // passed over, closed ones clicked, 1 request (the final check) either way.
    expect(editor.prefs, third.explain).toEqual({ categories: true, tags: true });
    const fourth = await repeat('v-open-first', SECOND);
    expect(fourth.run.output.status, fourth.explain).toBe('completed');
    expect(passedOver(fourth.run), fourth.explain).toEqual(['left_click on button "Categories"', 'left_click on button "Tags"']);
    expect(fourth.run.requests.length, fourth.explain).toBe(1);
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    const fifth = await repeat('v-open-first', FIRST);
    expect(fifth.run.output.status, fifth.explain).toBe('completed');
    expect(passedOver(fifth.run), fifth.explain).toEqual([]);
    expect(fifth.run.requests.length, fifth.explain).toBe(1);
    console.log([figures('panels open, first run', first.run), figures('repeat, panels open', second.run), figures('repeat, panels closed (repaired)', third.run), figures('next repeat, panels open', fourth.run), figures('next repeat, panels closed', fifth.run)].join('\n'));
  });

  it('reads a paragraph a repair typed back from its block, and never publishes with a paragraph missing', { timeout: 900_000 }, async () => {
    editor.prefs.categories = false;
    editor.prefs.tags = false;
    await record('v-pieces', FIRST);
    // The entry an earlier repair left (before reads back by identity): the second paragraph's typing lost, only the
    // Return between the paragraphs kept.
    const client = new Redis(redis.url);
    try {
      const key = worker.cacheKey('v-pieces');
      const entry = JSON.parse((await client.get(key))!) as { steps: Array<Array<{ tool: string; input: Record<string, unknown> }>> };
      const typed = entry.steps.flat().filter((a) => a.tool === 'type' && String(a.input.text).includes('paragraphs'));
      expect(typed).toHaveLength(2);
      entry.steps = entry.steps.map((step) => step.filter((a) => a !== typed[1]));
      await client.set(key, JSON.stringify(entry), 'KEEPTTL');
    } finally {
      client.disconnect();
    }
    const second = await repeat('v-pieces', SECOND);
    expect(second.run.output.status, second.explain).toBe('completed');
    // The repair typed the second paragraph into the empty block, whose name changed as it did:
    // read back from that block, not refused as a field that could not be found again.
    const repairs = second.run.events.filter((e) => e.type === 'action' && e.by === 'repair');
    expect(repairs.filter((e) => e.ok === false), second.explain).toEqual([]);
    const readBacks = second.run.events.filter((e) => e.type === 'read_back');
    expect(readBacks.filter((e) => e.by === 'repair' && e.expected === '{{paragraphs.1}}').map((e) => [e.ok, e.held]), second.explain).toEqual([[true, SECOND.paragraphs[1]]]);
    expect(readBacks.filter((e) => e.by === 'cache' && e.expected === '{{paragraphs.0}}').map((e) => [e.ok, e.held]), second.explain).toEqual([[true, SECOND.paragraphs[0]]]);
    // The repair's step is in view: one model turn, then the final check.
    expect(second.run.requests.length, second.explain).toBeLessThanOrEqual(2);
  });
});
