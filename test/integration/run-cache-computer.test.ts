/**
 * A repeat from the run cache in computer use (docs/run-cache.md#sources): a ledger form driven
 * by coordinates (test/support/ledger-app.ts), on real parts — Redis, Chromium, the SDK against
 * a scripted model. The first run types each value after a click on its field: two by name, a
 * date and an amount written out in the prompt's formats (derivations of one input value each),
 * and the prompt's own account (a constant). A repeat with an input that differs in every field
 * must save exactly that input, with the final check as its one request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { hostRules } from '../support/env.js';
import { FIRST_ENTRY, SECOND_ENTRY, ledgerAgent, ledgerRecord, ledgerWorkflow, startLedgerApp, type LedgerApp, type LedgerInput } from '../support/ledger-app.js';
import { startRunnerRig, type RunnerRig } from '../support/runner-rig.js';
import { type RecordedRequest } from '../support/scripted-model-server.js';

let rig: RunnerRig<LedgerApp>;
let app: LedgerApp;

beforeAll(async () => {
  rig = await startRunnerRig({ name: 'run-cache-computer', queue: 'cache-computer-test', app: startLedgerApp, hostRules: (ledger) => hostRules(ledger.host) });
  ({ app } = rig);
});

afterAll(async () => {
  await rig?.close();
});

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  inputTokens: number;
  events: Array<Record<string, unknown>>;
  saved: Array<Record<string, string>>;
}

async function run(versionId: string, input: LedgerInput): Promise<Run> {
  const before = app.saved.length;
  const ran = await rig.run(ledgerAgent(input, () => (app.saved.length > before ? String(app.saved.length) : undefined)), { workflowId: 'wf-ledger', workflowVersionId: versionId, inputPayload: input, specification: ledgerWorkflow(app.origin, app.host) });
  return { summary: ran.summary, requests: ran.requests, inputTokens: ran.tokens, events: ran.events, saved: app.saved.slice(before) };
}

const explain = (r: Run) => JSON.stringify({ error: r.summary.document.error, cache: r.summary.document.cache, stops: r.events.filter((e) => ['replay_stopped', 'step_repair'].includes(String(e.type))).map((e) => e.reason) });

describe('a computer-use repeat from the run cache', () => {
  it('repeats an input that differs in every field with the final check alone (≤ 2 requests, ≤ 0.15× the tokens), typing each value from its source where its field is now', async () => {
    const first = await run('v-ledger', FIRST_ENTRY);
    expect(first.summary.document, explain(first)).toMatchObject({ status: 'completed', output: { entry: '1' }, cache: { used: false } });
    expect(first.saved).toEqual([ledgerRecord(FIRST_ENTRY)]);

    const second = await run('v-ledger', SECOND_ENTRY);
    expect(second.summary.document, explain(second)).toMatchObject({ status: 'completed', output: { entry: '2' }, cache: { used: true, fallbackAtStep: null, finalCheck: { ran: true, matches: true } } });
    // Exactly the new input: the new date and amount in the prompt's formats, the prompt's account.
    expect(second.saved).toEqual([ledgerRecord(SECOND_ENTRY)]);
    expect(second.requests.length, explain(second)).toBeLessThanOrEqual(2);
    expect(second.inputTokens, explain(second)).toBeLessThanOrEqual(0.15 * first.inputTokens);
    // What the replay typed: never a value of the first input.
    const typed = second.events.filter((e) => e.type === 'action').map((e) => JSON.stringify(e.input ?? {}));
    for (const old of [FIRST_ENTRY.payee, FIRST_ENTRY.memo, ledgerRecord(FIRST_ENTRY).date, ledgerRecord(FIRST_ENTRY).amount]) expect(typed.filter((t) => t.includes(old!))).toEqual([]);
  }, 180_000);
});
