import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { finish, memberBlock, toolUseBlock, turn, type RecordedRequest, type ScriptedTurn } from './scripted-model-server.js';

/**
 * A ledger form for computer use (docs/run-cache.md#sources): one page whose fields sit at
 * fixed places, so a scripted model can drive it by coordinates as a computer-use model does
 * from a screenshot. Saving an entry records it and shows `Entry #N booked`. Serves on
 * 127.0.0.1; tests reach it as http://ledger.test:PORT/ through BROWSER_HOST_RULES.
 */
export interface LedgerApp {
  origin: string;
  host: string;
  saved: Array<Record<string, string>>;
  close(): Promise<void>;
}

/** The fields, top to bottom: each at x 350 and its own y (the centre of a 300 × 30 box). */
export const LEDGER_FIELDS = [
  { label: 'Date', name: 'date', y: 95 },
  { label: 'Payee', name: 'payee', y: 145 },
  { label: 'Amount', name: 'amount', y: 195 },
  { label: 'Memo', name: 'memo', y: 245 },
  { label: 'Account', name: 'account', y: 295 },
] as const;
const SAVE_AT: [number, number] = [250, 355];

export async function startLedgerApp(host = 'ledger.test'): Promise<LedgerApp> {
  const saved: LedgerApp['saved'] = [];
  const fields = LEDGER_FIELDS.map(
    (f) => `<label for="${f.name}" style="position:absolute;left:40px;top:${f.y - 10}px">${f.label}</label><input id="${f.name}" name="${f.name}" style="position:absolute;left:200px;top:${f.y - 15}px;width:300px;height:30px;box-sizing:border-box">`,
  ).join('');
  const form = `<!doctype html><title>New entry</title><body style="margin:0"><h1 style="position:absolute;left:40px;top:0;margin:10px 0;font-size:24px">New entry</h1><form method="post" action="/entries">${fields}<button style="position:absolute;left:200px;top:${SAVE_AT[1] - 15}px;width:100px;height:30px">Save</button></form></body>`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && url.pathname === '/entries') {
      void text(req).then((body) => {
        saved.push(Object.fromEntries(new URLSearchParams(body)));
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>Booked</title><h1>Entry #${saved.length} booked</h1>`);
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(form);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    host,
    saved,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface LedgerInput {
  date: string;
  payee: string;
  amount: number;
  memo: string;
}

/** The prompt's own value, typed by the model into the Account field: a constant of the version. */
export const LEDGER_ACCOUNT = 'Office supplies';

export const ledgerWorkflow = (origin: string, host: string) => ({
  name: 'Book a ledger entry',
  prompt: `Book one ledger entry from the input: its date as DD/MM/YYYY, its payee, its amount with two decimals and a thousands comma, its memo, and the account "${LEDGER_ACCOUNT}". Save it and report the entry number.`,
  allowedDomains: [host],
  startUrl: `${origin}/`,
  model: 'claude-sonnet-5-5',
  toolset: 'computer',
  outputSchema: { type: 'object', required: ['entry'], properties: { entry: { type: 'string' } } },
});

/** What the ledger must save for an input: the date and the amount as the prompt writes them, the prompt's account. */
export function ledgerRecord(input: LedgerInput): Record<string, string> {
  const [y, m, d] = input.date.split('-');
  return {
    date: `${d}/${m}/${y}`,
    payee: input.payee,
    amount: input.amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    memo: input.memo,
    account: LEDGER_ACCOUNT,
  };
}

export const FIRST_ENTRY: LedgerInput = { date: '2026-03-04', payee: 'Nordwind GmbH', amount: 1234.5, memo: 'Toner for the second floor' };
/** Differs from the first in every field. */
export const SECOND_ENTRY: LedgerInput = { date: '2026-11-27', payee: 'Kestrel Stationers', amount: 86.2, memo: 'Envelopes and stamps' };

/**
 * A computer-use model on the ledger, one action a turn, as such a model works from its
 * screenshots: a click on each field at its place, then its value typed — the payee and memo by
 * name, the date and the amount written out in the prompt's formats, the account the prompt's
 * own text —, a click on Save, the report. It answers the replay's final check from the page it
 * is shown. 12 turns for a first run. Its screenshots carry no text a script can read: `booked`
 * stands in for what the last one shows (the number of the entry booked, if one was).
 */
export function ledgerAgent(input: LedgerInput, booked: () => string | undefined) {
  const record = ledgerRecord(input);
  const typed: Record<string, string> = { date: record.date!, payee: '{{payee}}', amount: record.amount!, memo: '{{memo}}', account: LEDGER_ACCOUNT };
  const plan = [
    ...LEDGER_FIELDS.flatMap((f) => [
      { action: 'left_click', input: { coordinate: [350, f.y] } },
      { action: 'type', input: { text: typed[f.name]! } },
    ]),
    { action: 'left_click', input: { coordinate: SAVE_AT } },
  ];
  return (request: RecordedRequest): ScriptedTurn => {
    const tools = ((request.body as { tools?: Array<{ name?: string }> }).tools ?? []).map((t) => t.name);
    if (tools.length === 1 && tools[0] === 'verify_replay') {
      const shown = /Entry #(\d+) booked/.exec(JSON.stringify(request.body));
      return turn(toolUseBlock('verify_replay', shown ? { matches: true, reason: `Entry #${shown[1]} is booked.`, output: { entry: shown[1] } } : { matches: false, reason: 'No entry is booked.' }));
    }
    const done = ((request.body as { messages?: Array<{ role: string }> }).messages ?? []).filter((m) => m.role === 'assistant').length;
    const next = plan[done];
    if (next) return turn(memberBlock(next.action, next.input, 'computer'));
    const entry = booked();
    return entry ? finish('completed', { entry }) : finish('failed', undefined, 'no entry was booked');
  };
}
