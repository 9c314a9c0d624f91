/**
 * The run cache on the Django admin (docs/testing.md, docs/run-cache.md#sources): Debian's Django
 * serving a stock admin with one `Invoice` model (test/support/real-apps/django-admin.ts), driven
 * through the daemon (BullMQ and the run cache in real Redis, Chromium, the SDK against a scripted
 * model that acts on what the worker shows it). The prompt names the user to sign in as
 * ("clerk"), the list names the new record after it ("Invoice #5 from Cobalt Software Ltd"), and
 * the record's page opens under the admin's header, breadcrumbs and navigation sidebar: what
 * Django saved is what each test asserts.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../support/env.js';
import { startRecordingApi, type RecordingApi } from '../../support/recording-api.js';
import { startRedis, type TestRedis } from '../../support/redis.js';
import { FIRST_INVOICE, SECOND_INVOICE, invoiceAgent, invoiceWorkflow, type InvoiceInput } from '../../support/real-apps/django-admin-agent.js';
import { startDjangoAdmin, type DjangoAdmin, type DjangoInvoice } from '../../support/real-apps/django-admin.js';
import { startRealAppWorker, type FinishedRun, type RealAppWorker } from '../../support/real-apps/worker-daemon.js';

let redis: TestRedis;
let api: RecordingApi;
let admin: DjangoAdmin;
let dir: string;
let worker: RealAppWorker;

/** Invoices already in the admin: the new one is #5, its list has rows of other vendors. */
const SEED = [
  { vendor: 'Northwind Traders', reference: 'NW-1001', amount: '420.00', issued: '2026-01-12', notes: '', paid: true },
  { vendor: 'Acme Office Supply', reference: 'AOS-77', amount: '89.90', issued: '2026-01-30', notes: 'Toner.', paid: true },
  { vendor: 'Blue Harbor Energy', reference: 'BHE-2026-02', amount: '1310.25', issued: '2026-02-03', notes: '', paid: false },
  { vendor: 'Granite Legal LLP', reference: 'GL/2026/14', amount: '2500.00', issued: '2026-02-20', notes: 'Retainer, February.', paid: false },
];

beforeAll(async () => {
  [redis, api, admin, dir] = await Promise.all([startRedis(), startRecordingApi(), startDjangoAdmin({ seed: SEED }), tempDir('django-admin')]);
  worker = await startRealAppWorker({ redisUrl: redis.url, api, hostRules: admin.hostRules, dir });
}, 240_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.allSettled([redis?.stop(), api?.close(), admin?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Entered {
  run: FinishedRun;
  added: DjangoInvoice[];
  explain: string;
}

async function enter(versionId: string, invoice: Omit<InvoiceInput, 'password'>): Promise<Entered> {
  const input: InvoiceInput = { ...invoice, password: admin.user.password };
  const agent = invoiceAgent(input);
  const before = (await admin.invoices()).length;
  const run = await worker.run({ workflowVersionId: versionId, inputPayload: input, specification: invoiceWorkflow(admin.origin, admin.host) }, agent.script);
  const added = (await admin.invoices()).slice(before);
  const actions = run.events.filter((e) => e.type === 'action').map((e) => `${String(e.by)}: ${String(e.label ?? e.action)}${e.ok === false ? ` (failed: ${String(e.error)})` : ''}`);
  const explain = `agent: ${agent.log.turns.join(' → ')}\nchecks: ${JSON.stringify(agent.log.verifications)}\noutput.json: ${JSON.stringify({ status: run.output.status, output: run.output.output, error: run.output.error, cache: run.output.cache })}\nactions:\n${actions.join('\n')}\nadded: ${JSON.stringify(added)}\nlast read: ${agent.log.lastSeen.slice(-1500)}`;
  return { run, added, explain };
}

/** The invoice as Django keeps it, for an input. */
const saved = (invoice: Omit<InvoiceInput, 'password'>) => ({ vendor: invoice.vendor, reference: invoice.reference, amount: invoice.amount.toFixed(2), issued: invoice.issued, notes: invoice.notes, paid: invoice.paid });
const withoutId = ({ id: _id, ...rest }: DjangoInvoice) => rest;

function figures(label: string, run: FinishedRun): string {
  return `${label}: ${run.requests.length} requests, ${run.inputTokens} input tokens, ${(run.wallMs / 1000).toFixed(1)} s`;
}

describe('a replay on the Django admin', () => {
  it('repeats an invoice that differs in every field with no repair, in ≤ 2 requests and ≤ 0.15× the tokens, saves exactly the new input and opens the new record beside an earlier one of its vendor', { timeout: 900_000 }, async () => {
    const first = await enter('v-invoice', FIRST_INVOICE);
    expect(first.run.output, first.explain).toMatchObject({ status: 'completed', cache: { used: false }, output: { ...FIRST_INVOICE } });
    expect(first.added.map(withoutId), first.explain).toEqual([saved(FIRST_INVOICE)]);
    expect(first.run.events.some((e) => e.type === 'run_cache_saved'), first.explain).toBe(true);

    const second = await enter('v-invoice', SECOND_INVOICE);
    expect(second.run.output.cache, second.explain).toMatchObject({ used: true });
    // Never completed with a record that differs from its input.
    expect(second.added.map(withoutId), second.explain).toEqual([saved(SECOND_INVOICE)]);
    expect(second.run.output, second.explain).toMatchObject({ status: 'completed', output: { ...SECOND_INVOICE } });
    // Replayed whole: the user the prompt names, the link named after the new record and the final view need no model step.
    expect(second.run.output.cache, second.explain).toMatchObject({ repairedSteps: 0, modelSteps: 0, fallbackAtStep: null, finalCheck: { ran: true, matches: true } });
    expect(second.run.events.filter((e) => e.type === 'action' && e.by !== 'cache'), second.explain).toEqual([]);
    expect(second.run.requests.length, second.explain).toBeLessThanOrEqual(2);
    expect(second.run.inputTokens, second.explain).toBeLessThanOrEqual(0.15 * first.run.inputTokens);

    // The first run's vendor again: its invoice (#5) is still listed beside the new one, and the replay opens the new one.
    const third = await enter('v-invoice', FIRST_INVOICE);
    expect(third.added.map(withoutId), third.explain).toEqual([saved(FIRST_INVOICE)]);
    expect(third.run.output, third.explain).toMatchObject({ status: 'completed', output: { ...FIRST_INVOICE }, cache: { used: true, repairedSteps: 0, modelSteps: 0 } });
    const opened = admin.hits.map((hit) => /^hit GET \/admin\/invoices\/invoice\/(\d+)\/change\/ /.exec(hit)?.[1]).filter((id) => id !== undefined);
    expect(opened.at(-1), third.explain).toBe(String(third.added[0]!.id));
    expect(third.run.requests.length, third.explain).toBeLessThanOrEqual(2);
    console.log([figures('django admin, first run', first.run), figures('repeat, every field new', second.run), figures('repeat, the first vendor again', third.run)].join('\n'));
  });
});
