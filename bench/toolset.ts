/**
 * `npm run bench -- toolset`: the same fixture tasks with each action space, the scripted model
 * playing the shortest path each allows, through the real worker (Chromium, the SDK against a
 * scripted Messages API, video on). Printed per action space and task: model turns, input
 * tokens per turn and per task, and the worker's overhead per step; then `find`'s hit rate.
 *
 * The three action spaces:
 *   - browser: the browser toolset (the default); turns take references from the worker's reads;
 *   - computer-toolset: computer_toolset_20260801 (Sonnet 5.5, which takes no other computer
 *     tool), actions batched per turn,
 *     one screenshot after each turn that changed the page;
 *   - computer-1x: the earlier computer tool (computer_20251124), one action per turn, each
 *     answered with a screenshot: how computer use ran before.
 * A pixel agent acts only on what it has seen: it batches until an action changes the page,
 * and scrolls then looks before acting below the fold.
 *
 * Input tokens are estimated from the requests the worker sent, as the documentation counts
 * them: text at 4 characters a token, an image at ⌈w/28⌉·⌈h/28⌉ (toolset models) or w·h/750
 * (earlier models), plus each tool's documented definition overhead (browser toolset about
 * 6,600, computer toolset about 4,500; the earlier tool about 1,200 with its system prompt).
 * Cache reads are not discounted: the figure is what the model reads.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startShopServer, type ShopServer } from '../demo/shop-server.js';
import { DEMO_INPUT, DEMO_WORKFLOW, demoToolsetTurn, lastObservation, refIn, turnOf } from '../demo/workflow.js';
import type { BrowserSandbox, FoundElement } from '../src/browser/types.js';
import { createBrowser, createRecorder, createRunnerDeps } from '../src/compose.js';
import { loadConfig, type Config } from '../src/config/schema.js';
import { runExecution } from '../src/runner/run-execution.js';
import { createLocalStore } from '../src/storage/local-store.js';
import { createSilentLogger } from '../src/telemetry/logger.js';
import { rankElements } from '../src/toolset/find-rank.js';
import { calls, finish, startScriptedModelServer, turn, toolUseBlock, type RecordedRequest, type Script, type ScriptedContentBlock } from '../test/support/scripted-model-server.js';
import { startStaticServer, type StaticServer } from '../test/support/static-server.js';
import { addCost } from './cost.js';
import { percentile } from './process-stats.js';
import { neverAborted } from '../test/support/env.js';

const logger = createSilentLogger();
const FORMS_ROOT = fileURLToPath(new URL('../test/fixtures/sites/toolset/', import.meta.url));
const SPACES = ['browser', 'computer-toolset', 'computer-1x'] as const;
export type Space = (typeof SPACES)[number];
const TOOL_OVERHEAD: Record<Space, number> = { browser: 6_600, 'computer-toolset': 4_500, 'computer-1x': 1_200 };
const RUNS = 3;

/** The report page of task "read": 60 invoices, the one asked for far below the fold. */
function reportPage(): string {
  const rows = Array.from({ length: 60 }, (_, i) => {
    const n = String(i + 1).padStart(3, '0');
    return `<tr><td>INV-${n}</td><td>Customer ${i + 1}</td><td>${(100 + i * 7.25).toFixed(2)} EUR</td></tr>`;
  }).join('');
  return `<!doctype html><title>Invoices</title><style>body{margin:0;font:16px/1.6 sans-serif} td{padding:6px 12px}</style><main><h1>Open invoices</h1><table><thead><tr><th>Invoice</th><th>Customer</th><th>Amount</th></tr></thead><tbody>${rows}</tbody></table></main>`;
}
const WANTED_INVOICE = 'INV-047';
const WANTED_AMOUNT = (100 + 46 * 7.25).toFixed(2);

interface Task {
  name: string;
  specification: Record<string, unknown>;
  input: unknown;
  /** The scripted model of each action space. */
  script(space: Space, at: Coordinates): Script;
}

/** Where the pixel agent clicks: element centres read once from the page (what a screenshot shows). */
type Coordinates = Record<string, [number, number]>;

const b = (name: string, input: Record<string, unknown>): ScriptedContentBlock => toolUseBlock(name, input, undefined, 'browser');
const c = (name: string, input: Record<string, unknown>): ScriptedContentBlock => toolUseBlock(name, input, undefined, 'computer');
const legacy = (action: string, input: Record<string, unknown> = {}): ScriptedContentBlock => toolUseBlock('computer', { action, ...input });

/** One scripted answer per turn; for computer-1x each block becomes a turn of its own. */
function byTurns(space: Space, turns: ScriptedContentBlock[][], done: (request: RecordedRequest) => ReturnType<typeof finish>): Script {
  const flat = space === 'computer-1x' ? turns.flat().map((block) => [block]) : turns;
  return (request) => {
    const n = turnOf(request.body);
    return n < flat.length ? turn(...flat[n]!) : done(request);
  };
}

const toComputer = (space: Space) => (space === 'computer-1x' ? legacy : (action: string, input: Record<string, unknown> = {}) => c(action, input));

function tasks(shop: ShopServer, forms: StaticServer): Task[] {
  const formsOrigin = `http://forms.test:${forms.port}`;
  return [
    {
      name: 'shop order',
      specification: DEMO_WORKFLOW(`${shop.origin}/`),
      input: DEMO_INPUT,
      script: (space) => {
        if (space === 'browser') return (request) => calls(demoToolsetTurn(turnOf(request.body), lastObservation(request.body)));
        const a = toComputer(space);
        return byTurns(
          space,
          [
            [a('left_click', { coordinate: [250, 120] }), a('type', { text: 'ann' }), a('left_click', { coordinate: [250, 180] }), a('type', { text: '{{password}}' }), a('left_click', { coordinate: [175, 240] })],
            [a('triple_click', { coordinate: [250, 120] }), a('type', { text: 'PO-778' }), a('key', { text: 'Return' })],
          ],
          () => finish('completed', { orderId: 'A-1001' }),
        );
      },
    },
    {
      name: 'onboarding form',
      specification: { prompt: 'Create the customer from the input and save it.', allowedDomains: [new URL(formsOrigin).host], startUrl: `${formsOrigin}/` },
      input: { company: 'ACME Ltd', email: 'ops@acme.test', country: 'France', manager: 'Jo' },
      script: (space, at) => {
        if (space === 'browser') {
          return (request) => {
            const seen = lastObservation(request.body);
            if (turnOf(request.body) > 0) return finish('completed', { saved: seen.includes('Save customer') });
            const set = (role: string, name: string, value: unknown) => b('form_input', { target: { type: 'ref', ref: refIn(seen, role, name) }, value });
            // The opening lists the whole form, the fields below the fold included.
            return turn(
              set('textbox', 'Company name', 'ACME Ltd'),
              set('textbox', 'E-mail address', 'ops@acme.test'),
              set('combobox', 'Country', 'France'),
              set('checkbox', 'VIP customer', true),
              set('radio', 'Pro', true),
              set('textbox', 'Start date', '2026-12-01'),
              set('textbox', 'Account manager', 'Jo'),
              b('left_click', { target: { type: 'ref', ref: refIn(seen, 'button', 'Save customer') } }),
              b('read_page', { filter: 'interactive' }),
            );
          };
        }
        const a = toComputer(space);
        const p = (name: string) => at[name]!;
        return byTurns(
          space,
          [
            [
              a('left_click', { coordinate: p('company') }), a('type', { text: 'ACME Ltd' }),
              a('left_click', { coordinate: p('email') }), a('type', { text: 'ops@acme.test' }),
              // A native select's list is not in screenshots: focus it and type the option.
              a('left_click', { coordinate: p('country') }), a('type', { text: 'France' }), a('key', { text: 'Return' }),
              a('left_click', { coordinate: p('vip') }), a('left_click', { coordinate: p('plan-pro') }),
              a('left_click', { coordinate: p('start') }), a('type', { text: '12012026' }),
              // The rest is below the fold: scroll, then look.
              a('scroll', { coordinate: [500, 400], scroll_direction: 'down', scroll_amount: 10 }),
            ],
            [a('left_click', { coordinate: p('manager-scrolled') }), a('type', { text: 'Jo' }), a('left_click', { coordinate: p('save-scrolled') })],
          ],
          () => finish('completed', { saved: true }),
        );
      },
    },
    {
      name: 'read a report',
      specification: { prompt: `Report the amount of invoice ${WANTED_INVOICE}.`, allowedDomains: [new URL(formsOrigin).host], startUrl: `${formsOrigin}/report.html` },
      input: null,
      script: (space) => {
        const amount = () => finish('completed', { amount: WANTED_AMOUNT });
        if (space === 'browser') return byTurns(space, [[b('find', { query: `${WANTED_INVOICE} row` }), b('get_page_text', {})]], amount);
        const a = toComputer(space);
        // Rows 1–20 show; row 47 is about two screens down: scroll and look, twice.
        const look = space === 'computer-1x' ? [] : [a('screenshot')];
        return byTurns(space, [[a('scroll', { coordinate: [500, 400], scroll_direction: 'down', scroll_amount: 8 }), ...look, a('scroll', { coordinate: [500, 400], scroll_direction: 'down', scroll_amount: 8 }), ...look]], amount);
      },
    },
  ];
}

/** Element centres of the onboarding form, as the pixel agent sees them (before and after its scroll). */
async function formCoordinates(browser: BrowserSandbox, formsOrigin: string): Promise<Coordinates> {
  const signal = new AbortController().signal;
  const session = await browser.openSession({ executionId: 'bench-coordinates', viewport: { width: 1280, height: 800 }, allowedDomains: ['forms.test'], onBlocked: () => undefined }, signal);
  try {
    await session.navigate(`${formsOrigin}/`, signal);
    const tab = session.tab()!;
    const centres = async (ids: string[], suffix = '') => {
      const out = await tab.evaluate(`JSON.stringify(Object.fromEntries(${JSON.stringify(ids)}.map((id) => { const r = document.getElementById(id).getBoundingClientRect(); return [id + ${JSON.stringify(suffix)}, [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]]; })))`, 5_000, neverAborted);
      if (!out.ok) throw new Error(out.error);
      return JSON.parse(out.value) as Coordinates;
    };
    const top = await centres(['company', 'email', 'country', 'vip', 'plan-pro', 'start']);
    await tab.evaluate('window.scrollBy(0, 1000)', 5_000, neverAborted);
    const below = await centres(['manager', 'save'], '-scrolled');
    return { ...top, ...below };
  } finally {
    await session.close();
  }
}

interface Figures {
  turns: number;
  inputTokens: number;
  overheadsMs: number[];
}

/** A request's input tokens, estimated as the header says (text, images, the tool's documented overhead). */
export function estimateInputTokens(request: RecordedRequest, space: Space, toolsetTokens = TOOL_OVERHEAD[space]): number {
  const body = request.body as { system?: Array<{ text: string }>; tools?: unknown[]; messages?: unknown[] };
  let images = 0;
  const withoutImages = JSON.stringify({ system: body.system, tools: (body.tools ?? []).filter((t) => (t as { name?: string }).name !== undefined), messages: body.messages }, (key, value: unknown) => {
    if (key === 'source' && value && typeof value === 'object' && (value as { type?: string }).type === 'base64') {
      images++;
      return '';
    }
    return value;
  });
  const perImage = space === 'computer-1x' ? Math.round((1280 * 800) / 750) : Math.ceil(1280 / 28) * Math.ceil(800 / 28);
  return Math.round(withoutImages.length / 4) + images * perImage + toolsetTokens;
}

async function runTask(config: Config, browser: BrowserSandbox, dir: string, task: Task, space: Space, at: Coordinates): Promise<Figures> {
  const model = await startScriptedModelServer(task.script(space, at));
  const runConfig = { ...config, ANTHROPIC_BASE_URL: model.url };
  const recorder = createRecorder(runConfig, logger);
  try {
    const deps = createRunnerDeps({ config: runConfig, logger, browser, store: createLocalStore({ dir, prefix: '' }), ...(recorder ? { recorder } : {}) });
    const specification = {
      ...task.specification,
      ...(space === 'computer-toolset' ? { model: 'claude-sonnet-5-5', toolset: 'computer' } : space === 'computer-1x' ? { model: 'claude-opus-4-7' } : {}),
    };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload: task.input, specification }, new AbortController().signal);
    if (summary.status !== 'completed' || summary.document.status !== 'completed') throw new Error(`${task.name} with ${space} did not complete: ${JSON.stringify(summary.status === 'skipped' ? summary : summary.document.error)}`);
    addCost(`toolset ${space}`, summary.document.usage.byModel);
    const logs = await readFile(fileURLToPath(summary.urls.logsUrl!), 'utf8');
    const overheadsMs = logs
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; overheadMs?: number | null })
      .filter((e) => e.type === 'model_turn' && typeof e.overheadMs === 'number')
      .map((e) => e.overheadMs as number);
    return { turns: model.requests.length, inputTokens: model.requests.reduce((sum, r) => sum + estimateInputTokens(r, space), 0), overheadsMs };
  } finally {
    await Promise.all([model.stop(), recorder?.close?.()]);
  }
}

/** find's hit rate: for each description, is the intended element the first answer? */
async function findHitRate(browser: BrowserSandbox, origins: { forms: string; shop: string }): Promise<{ hits: number; total: number; misses: string[] }> {
  const QUERIES: Array<[page: string, query: string, expected: string]> = [
    [`${origins.forms}/`, 'company name', 'textbox "Company name"'],
    [`${origins.forms}/`, 'email field', 'textbox "E-mail address"'],
    [`${origins.forms}/`, 'notes', 'textbox "Notes"'],
    [`${origins.forms}/`, 'country dropdown', 'combobox "Country"'],
    [`${origins.forms}/`, 'VIP checkbox', 'checkbox "VIP customer"'],
    [`${origins.forms}/`, 'pro plan', 'radio "Pro"'],
    [`${origins.forms}/`, 'start date', 'textbox "Start date"'],
    [`${origins.forms}/`, 'password input', 'textbox "Password"'],
    [`${origins.forms}/`, 'account manager', 'textbox "Account manager"'],
    [`${origins.forms}/`, 'save button', 'button "Save customer"'],
    [`${origins.forms}/`, 'submit', 'button "Save customer"'],
    [`${origins.forms}/`, 'description editor', 'textbox "Description editor"'],
    [`${origins.forms}/`, 'price list link', 'link "Open the price list"'],
    [`${origins.forms}/`, 'next page', 'link "Next page"'],
    [`${origins.forms}/`, 'the alert button', 'button "Show alert"'],
    [`${origins.forms}/`, 'pick plan card', 'clickable "Pick this plan"'],
    [`${origins.forms}/`, 'customer form', 'form "Customer"'],
    [`${origins.forms}/`, 'main heading', 'heading "Customer onboarding"'],
    [`${origins.shop}/`, 'username', 'textbox "User"'],
    [`${origins.shop}/`, 'password', 'textbox "Password"'],
    [`${origins.shop}/`, 'log in button', 'button "Sign in"'],
    [`${origins.shop}/orders`, 'order reference', 'textbox "Reference"'],
    [`${origins.shop}/orders`, 'quantity box', 'textbox "Quantity"'],
    [`${origins.shop}/orders`, 'place the order', 'button "Place order"'],
    [`${origins.forms}/report.html`, `${WANTED_INVOICE}`, `cell "${WANTED_INVOICE}"`],
  ];
  const signal = new AbortController().signal;
  const session = await browser.openSession({ executionId: 'bench-find', viewport: { width: 1280, height: 800 }, allowedDomains: ['forms.test', 'shop.test'], onBlocked: () => undefined }, signal);
  const misses: string[] = [];
  try {
    let hits = 0;
    for (const [page, query, expected] of QUERIES) {
      if (session.currentUrl() !== page) await session.navigate(page, signal);
      const lines = await session.tab()!.find((candidates: FoundElement[]) => rankElements(query, candidates), 20, neverAborted);
      if (lines[0]?.startsWith(`${expected} [`)) hits++;
      else misses.push(`"${query}" → ${lines[0] ?? '(nothing)'}`);
    }
    return { hits, total: QUERIES.length, misses };
  } finally {
    await session.close();
  }
}

export async function benchToolset(): Promise<Record<string, number | string>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-toolset-'));
  const [shop, forms] = await Promise.all([
    startShopServer(),
    startStaticServer({
      root: FORMS_ROOT,
      handle: (req, res) => {
        if (req.url !== '/report.html') return false;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(reportPage());
        return true;
      },
    }),
  ]);
  const config = loadConfig({
    ...process.env,
    ANTHROPIC_API_KEY: 'bench-not-a-key',
    BROWSER_HOST_RULES: `MAP shop.test 127.0.0.1,MAP forms.test 127.0.0.1`,
    WORK_DIR: dir,
    LOG_LEVEL: 'silent',
    VIDEO_FPS: '10',
  });
  const browser = createBrowser(config, logger);
  try {
    const at = await formCoordinates(browser, `http://forms.test:${forms.port}`);
    const figures: Record<string, number | string> = {};
    const totals: Record<Space, { turns: number; tokens: number; overheads: number[] }> = {
      browser: { turns: 0, tokens: 0, overheads: [] },
      'computer-toolset': { turns: 0, tokens: 0, overheads: [] },
      'computer-1x': { turns: 0, tokens: 0, overheads: [] },
    };
    for (const task of tasks(shop, forms)) {
      for (const space of SPACES) {
        let last: Figures | undefined;
        for (let i = 0; i < RUNS; i++) {
          last = await runTask(config, browser, dir, task, space, at);
          totals[space].overheads.push(...last.overheadsMs);
        }
        figures[`${task.name} · ${space}: turns`] = last!.turns;
        figures[`${task.name} · ${space}: input tokens/task`] = last!.inputTokens;
        figures[`${task.name} · ${space}: input tokens/turn`] = Math.round(last!.inputTokens / last!.turns);
        totals[space].turns += last!.turns;
        totals[space].tokens += last!.inputTokens;
      }
    }
    for (const space of SPACES) {
      const t = totals[space];
      figures[`all tasks · ${space}: turns`] = t.turns;
      figures[`all tasks · ${space}: input tokens`] = t.tokens;
      figures[`all tasks · ${space}: step overhead p50 / p95 ms`] = `${percentile(t.overheads, 50)} / ${percentile(t.overheads, 95)}`;
    }
    for (const base of ['computer-toolset', 'computer-1x'] as const) {
      figures[`browser ÷ ${base}: turns (target ≤ 0.7)`] = Math.round((totals.browser.turns / totals[base].turns) * 100) / 100;
      figures[`browser ÷ ${base}: input tokens (target ≤ 0.5)`] = Math.round((totals.browser.tokens / totals[base].tokens) * 100) / 100;
    }
    const found = await findHitRate(browser, { forms: `http://forms.test:${forms.port}`, shop: shop.origin });
    figures['find: first answer is the intended element'] = `${found.hits}/${found.total}`;
    if (found.misses.length > 0) figures['find: misses'] = found.misses.join('; ');
    return figures;
  } finally {
    await browser.close();
    await Promise.allSettled([shop.close(), forms.close()]);
    await rm(dir, { recursive: true, force: true });
  }
}
