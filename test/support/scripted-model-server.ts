import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkPrefix, checkRequestShape, hasPreservedThinking, modelInfo, thinkingBlock } from './fake-api-rules.js';
import { account, COMPACTION_SUMMARY, outputTokens, type Accounting, type PromptCache } from './fake-api-tokens.js';

/**
 * A local HTTP server speaking the Anthropic Messages API wire format, for tests that drive
 * the real SDK (or the whole worker) without a model. It answers `POST /v1/messages` from a
 * script of turns and records every request it receives so tests can assert what was sent.
 *
 * What @anthropic-ai/sdk 1.12's `beta.messages.create` sends (checked against this server):
 * `POST /v1/messages` with no query string (a `?beta=true` from other SDK versions is accepted
 * too), the betas in the `anthropic-beta` header, the key as `Authorization: Bearer …`, and
 * `x-stainless-retry-count` counting the retries of one call.
 *
 * It applies the API's documented rules (fake-api-rules.ts): the prefix check on signed thinking
 * blocks, the tool versions each model refuses, `context_management` in its token accounting, a
 * prompt cache, and `GET /v1/models/{id}`. A request that breaks a rule is answered with the
 * API's 400 and kept in `refusals`; tests of the loop assert there are none.
 */

export interface ScriptedContentBlock {
  type: string;
  [key: string]: unknown;
}

export interface ScriptedResponse {
  content: ScriptedContentBlock[];
  stop_reason?: string;
  usage?: Partial<{
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number | null;
    cache_creation_input_tokens: number | null;
    /** `usage.iterations`, as the API itemises a request that compacted (set by the server's accounting, or scripted). */
    iterations: ScriptedIteration[];
  }>;
  /** Wait this long before answering (the wait ends early if the client goes away). */
  delayMs?: number;
  /** Answer only once this settles: a test holds a run at a step until it has seen what it wants. */
  until?: Promise<unknown>;
  headers?: Record<string, string>;
  /** `context_management.applied_edits` of the response (set by the server's accounting). */
  appliedEdits?: Array<Record<string, unknown>>;
}

/** One entry of `usage.iterations` (the SDK's `BetaIterationsUsage`). */
export interface ScriptedIteration {
  type: 'message' | 'compaction' | 'advisor_message' | 'fallback_message';
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cache_creation: null;
  model?: string | null;
}

export interface ScriptedFailure {
  status: number;
  /** Response body; default the API's error shape for the status. */
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** Never answers: the request stays open until the client aborts or the server stops. */
export interface ScriptedHang {
  hang: true;
}

export type ScriptedTurn = ScriptedResponse | ScriptedFailure | ScriptedHang;

export interface RecordedRequest {
  /** Epoch ms the request arrived. */
  receivedAt: number;
  method: string;
  /** Path and query as received, e.g. `/v1/messages?beta=true`. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body (or the raw text when it is not JSON). */
  body: unknown;
  /** The raw body text, to search for strings that must not appear. */
  rawBody: string;
}

export type Script = ScriptedTurn[] | ((request: RecordedRequest, index: number) => ScriptedTurn);

export interface ScriptedModelServer {
  /** Base URL for the SDK's `baseURL` (no trailing slash). */
  url: string;
  /** Every request received on the messages endpoint, in order. */
  requests: RecordedRequest[];
  /** Requests refused by the API's rules (prefix check, tool versions), with the API's message. */
  refusals: Array<{ index: number; message: string }>;
  /** The token accounting of each answered request, in order (undefined where the script set the usage). */
  accounting: Array<Accounting | undefined>;
  /** Model ids asked of `GET /v1/models/{id}`, in order. */
  modelLookups: string[];
  stop(): Promise<void>;
}

export interface ScriptedModelServerOptions {
  /**
   * What `GET /v1/models/{id}` answers for an id: a model object, or a status to fail with.
   * Ids not given get the fake's own catalogue (fake-api-rules.ts `modelInfo`), else 404.
   */
  models?: Record<string, Record<string, unknown> | { status: number }>;
  /**
   * A test that sends a refused request on purpose says so. Otherwise `stop()` rejects when any
   * request was refused, so every test that talks to this server meets the API's rules.
   */
  expectRefusals?: boolean;
}

export async function startScriptedModelServer(script: Script, options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const requests: RecordedRequest[] = [];
  const refusals: ScriptedModelServer['refusals'] = [];
  const accounting: ScriptedModelServer['accounting'] = [];
  const modelLookups: string[] = [];
  const cache: PromptCache = new Set();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '').split('?')[0] ?? '';
      const modelPath = /^\/v1\/models\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && modelPath) {
        const id = decodeURIComponent(modelPath[1]!);
        modelLookups.push(id);
        const given = options.models?.[id];
        if (given && 'status' in given && typeof given.status === 'number') {
          send(res, given.status, errorBody(given.status, `scripted model server: models lookup fails with ${given.status}`), { 'x-should-retry': 'false' });
          return;
        }
        const info = given ?? modelInfo(id);
        if (!info) send(res, 404, errorBody(404, `model: ${id}`), { 'x-should-retry': 'false' });
        else send(res, 200, info, {});
        return;
      }
      if (req.method !== 'POST' || path !== '/v1/messages') {
        send(res, 404, errorBody(404, `scripted model server: no route ${req.method} ${req.url}`), {});
        return;
      }
      let body: unknown = rawBody;
      try {
        body = JSON.parse(rawBody);
      } catch {
        // Recorded as text; the script decides what to answer.
      }
      const recorded: RecordedRequest = { method: req.method, url: req.url ?? '', headers: req.headers, body, rawBody, receivedAt: Date.now() };
      const index = requests.length;
      requests.push(recorded);
      const refusal = body !== null && typeof body === 'object' ? applyRules(body as Record<string, unknown>, betasOf(req.headers)) : undefined;
      if (refusal) {
        refusals.push({ index, message: refusal.message });
        send(res, refusal.status, errorBody(refusal.status, refusal.message), { 'x-should-retry': 'false' });
        return;
      }
      let turn: ScriptedTurn | undefined;
      // A refused request is the API's answer, not a turn of the script.
      const step = index - refusals.length;
      try {
        turn = typeof script === 'function' ? script(recorded, step) : script[step];
      } catch (error) {
        send(res, 500, errorBody(500, `scripted model server: the script threw: ${(error as Error).message}`), { 'x-should-retry': 'false' });
        return;
      }
      if (!turn) {
        // Not retried by the SDK: a test that runs past its script should fail at once.
        send(res, 400, errorBody(400, `scripted model server: the script has no turn ${step + 1}`), { 'x-should-retry': 'false' });
        return;
      }
      if (!('hang' in turn) && !('status' in turn)) {
        const counted = turn.usage === undefined && body !== null && typeof body === 'object' ? account(body as Record<string, unknown>, cache) : undefined;
        accounting[index] = counted;
        turn = withApiBlocks(turn, body as Record<string, unknown>, index, counted);
      }
      answer(req, res, turn, index, body);
    });
  });
  server.keepAliveTimeout = 1_000;
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    refusals,
    accounting,
    modelLookups,
    stop() {
      stopping ??= new Promise<void>((resolve, reject) => {
        server.close(() => {
          if (refusals.length === 0 || options.expectRefusals) resolve();
          else reject(new Error(`the scripted model server refused ${refusals.length} request(s) by the API's rules: ${refusals.map((r) => `#${r.index + 1} ${r.message}`).join('; ')}`));
        });
        // Idle keep-alive sockets and hanging requests would otherwise hold close open.
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}

/** The betas of a request: the SDK sends them in the `anthropic-beta` header, comma-separated. */
function betasOf(headers: http.IncomingHttpHeaders): string[] {
  const raw = headers['anthropic-beta'];
  return [raw ?? []].flat().flatMap((value) => value.split(',')).map((beta) => beta.trim()).filter((beta) => beta !== '');
}

/** The request shape and the prefix check; `drop_block` removes the blocks it cannot bind. */
function applyRules(body: Record<string, unknown>, betas: readonly string[]): { status: number; message: string } | undefined {
  const shape = checkRequestShape(body, betas);
  if (shape) return shape;
  const prefix = checkPrefix(body);
  return 'refusal' in prefix ? prefix.refusal : undefined;
}

/**
 * What the API adds to a scripted answer: a thinking block bound to the request (for a model with
 * preserved thinking, or when the request asks for thinking), its summary when asked for
 * (`display: "summarized"`), a compaction block past the compaction trigger, and the usage.
 */
function withApiBlocks(turn: ScriptedResponse, body: Record<string, unknown> | null, index: number, counted: Accounting | undefined): ScriptedResponse {
  if (body === null || typeof body !== 'object') return turn;
  const thinking = body.thinking as { type?: unknown; display?: unknown } | undefined;
  const thinks = hasPreservedThinking(String(body.model ?? '')) || thinking?.type === 'adaptive';
  // A compaction block opens the answer, before the thinking, whether the accounting or the script made it.
  const blocks: ScriptedContentBlock[] = turn.content.filter((b) => b.type === 'compaction');
  if (counted?.compact) blocks.push({ type: 'compaction', content: COMPACTION_SUMMARY, encrypted_content: null });
  if (thinks && !turn.content.some((b) => b.type === 'thinking')) {
    const calls = turn.content.filter((b) => b.type === 'tool_use').map((b) => String(b.name));
    const summary = thinking?.display === 'summarized' ? `Turn ${index + 1}: ${calls.length > 0 ? `next, ${calls.join(', ')}` : 'answering'}.` : '';
    blocks.push(thinkingBlock(body, summary) as ScriptedContentBlock);
  }
  const out: ScriptedResponse = { ...turn, content: [...blocks, ...turn.content.filter((b) => b.type !== 'compaction')] };
  if (counted) {
    // Billed as the API bills them: uncached input, cache reads and writes apart, and every block the model wrote as output.
    const answer = { input_tokens: counted.input, cache_read_input_tokens: counted.cacheRead, cache_creation_input_tokens: counted.cacheWrite, output_tokens: outputTokens(out.content) };
    counted.output = answer.output_tokens;
    out.usage = answer;
    if (counted.compact) {
      // As the API itemises a compacting request: the compaction, a sampling of its own that read
      // the whole context and wrote the summary (in none of the top-level fields), then the answer
      // (the top level itemised).
      const compaction: ScriptedIteration = { type: 'compaction', input_tokens: counted.total, output_tokens: outputTokens([{ type: 'text', text: COMPACTION_SUMMARY }]), cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: null };
      counted.compaction = { input: compaction.input_tokens, output: compaction.output_tokens };
      out.usage = { ...answer, iterations: [compaction, { type: 'message', ...answer, cache_creation: null, model: String(body.model ?? '') }] };
    }
    if (counted.cleared) out.appliedEdits = [{ type: 'clear_tool_uses_20250919', cleared_input_tokens: counted.cleared.tokens, cleared_tool_uses: counted.cleared.toolUses }];
  }
  return out;
}

function answer(req: http.IncomingMessage, res: http.ServerResponse, turn: ScriptedTurn, index: number, body: unknown): void {
  if ('hang' in turn) return;
  const reply = () => {
    if ('status' in turn) {
      send(res, turn.status, turn.body ?? errorBody(turn.status, `scripted failure ${turn.status}`), turn.headers ?? {});
    } else {
      send(res, 200, message(turn, index, body), turn.headers ?? {});
    }
  };
  if ('until' in turn && turn.until) {
    const gate = turn.until;
    const go = () => answer(req, res, { ...turn, until: undefined }, index, body);
    void gate.then(go, go);
    return;
  }
  if (!turn.delayMs) {
    reply();
    return;
  }
  const timer = setTimeout(reply, turn.delayMs);
  // The client gave up (abort or timeout): nobody is left to answer. (The request's own
  // 'close' fires once its body is read, so only the response's tells that.)
  res.once('close', () => clearTimeout(timer));
}

function message(turn: ScriptedResponse, index: number, requestBody: unknown): Record<string, unknown> {
  const model =
    requestBody !== null && typeof requestBody === 'object' && typeof (requestBody as { model?: unknown }).model === 'string'
      ? (requestBody as { model: string }).model
      : 'claude-scripted';
  const hasToolUse = turn.content.some((b) => b.type === 'tool_use');
  return {
    id: `msg_scripted_${String(index + 1).padStart(4, '0')}`,
    type: 'message',
    role: 'assistant',
    model,
    content: turn.content,
    stop_reason: turn.stop_reason ?? (hasToolUse ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: {
      input_tokens: turn.usage?.input_tokens ?? 100,
      output_tokens: turn.usage?.output_tokens ?? 20,
      cache_read_input_tokens: turn.usage?.cache_read_input_tokens === undefined ? 0 : turn.usage.cache_read_input_tokens,
      cache_creation_input_tokens: turn.usage?.cache_creation_input_tokens === undefined ? 0 : turn.usage.cache_creation_input_tokens,
      ...(turn.usage?.iterations ? { iterations: turn.usage.iterations } : {}),
      server_tool_use: null,
      service_tier: 'standard',
    },
    container: null,
    context_management: turn.appliedEdits ? { applied_edits: turn.appliedEdits } : null,
  };
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** The API's error body: `{ type: 'error', error: { type, message } }`. */
export function errorBody(status: number, messageText: string): Record<string, unknown> {
  return { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message: messageText } };
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  if (res.writableEnded || res.destroyed) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': `req_scripted_${Date.now().toString(36)}`,
    ...headers,
  });
  res.end(text);
}

// ---- builders ----

let toolUseCounter = 0;

/** A text content block. */
export function text(value: string): ScriptedContentBlock {
  return { type: 'text', text: value };
}

/** A tool_use content block with a fresh id (a toolset member's when `toolsetName` is given). */
export function toolUseBlock(name: string, input: unknown, id = `toolu_scripted_${String(++toolUseCounter).padStart(4, '0')}`, toolsetName?: string): ScriptedContentBlock {
  return { type: 'tool_use', id, name, input, ...(toolsetName ? { toolset_name: toolsetName } : {}) };
}

/** A browser toolset member call, as a content block: `member('left_click', { target: … })`. */
export function memberBlock(name: string, input: Record<string, unknown> = {}, toolsetName = 'browser'): ScriptedContentBlock {
  return toolUseBlock(name, input, undefined, toolsetName);
}

/** A turn calling one member of the browser toolset (the default action space). */
export function browser(name: string, input: Record<string, unknown> = {}): ScriptedResponse {
  return turn(memberBlock(name, input));
}

/** A turn made of tool calls in the demo's shape (`{ name, input, toolset_name? }`). */
export function calls(list: ReadonlyArray<{ name: string; input: unknown; toolset_name?: string }>): ScriptedResponse {
  return turn(...list.map((c) => toolUseBlock(c.name, c.input, undefined, c.toolset_name)));
}

/** A turn made of the given blocks; `tool_use` stop reason when one of them is a tool call. */
export function turn(...blocks: ScriptedContentBlock[]): ScriptedResponse {
  return { content: blocks };
}

/** A turn calling one tool. */
export function toolUse(name: string, input: unknown): ScriptedResponse {
  return turn(toolUseBlock(name, input));
}

/** A turn calling the computer tool: `computer('left_click', { coordinate: [10, 20] })`. */
export function computer(action: string, params: Record<string, unknown> = {}): ScriptedResponse {
  return toolUse('computer', { action, ...params });
}

/** A turn calling the `finish` tool. */
export function finish(status: 'completed' | 'failed', output?: unknown, reason?: string): ScriptedResponse {
  const input: Record<string, unknown> = { status };
  if (output !== undefined) input.output = output;
  if (reason !== undefined) input.reason = reason;
  return toolUse('finish', input);
}

/** A turn that ends (`end_turn`) with only text. */
export function endTurn(...texts: string[]): ScriptedResponse {
  return { content: (texts.length ? texts : ['Done.']).map(text), stop_reason: 'end_turn' };
}

/** A turn the model refused. */
export function refusal(value = 'I cannot help with that.'): ScriptedResponse {
  return { content: [text(value)], stop_reason: 'refusal' };
}

/** An HTTP failure, with the API's error body unless one is given. */
export function failure(status: number, opts: { headers?: Record<string, string>; body?: unknown; delayMs?: number } = {}): ScriptedFailure {
  return { status, ...opts };
}

/** A turn with a delay before the answer. */
export function delayed<T extends ScriptedResponse | ScriptedFailure>(turnToDelay: T, delayMs: number): T {
  return { ...turnToDelay, delayMs };
}
