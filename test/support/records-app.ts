import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';

/**
 * A small back-office app for the run cache's value tests: sign in, open the newest invoice (its
 * link and page carry the invoice's number), fill a form of every kind of field (a checkbox, a
 * number, a one-character code, a select, a date, text), save. Serves on 127.0.0.1; tests reach
 * it as http://records.test:PORT/ through BROWSER_HOST_RULES. Records every invoice saved.
 */
export interface RecordsApp {
  origin: string;
  saved: Array<Record<string, string>>;
  options: {
    /** Signed in already (a single sign-on, a kept profile): the start page goes to the invoices. */
    open?: boolean;
    /** The amount field keeps at most 5, whatever is entered (a page that rewrites a field on input). */
    clampAmount?: boolean;
    /** Two invoices to complete: two links of the same shape. */
    backlog?: boolean;
  };
  close(): Promise<void>;
}

const FIRST_INVOICE = 1042;

export async function startRecordsApp(): Promise<RecordsApp> {
  const saved: RecordsApp['saved'] = [];
  const options: RecordsApp['options'] = {};
  const page = (title: string, body: string) => `<!doctype html><title>${title}</title><body>${body}</body>`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const invoice = /^\/invoice\/(\d+)$/.exec(url.pathname)?.[1];
    if (req.method === 'POST') {
      void text(req).then((body) => {
        const fields = Object.fromEntries(new URLSearchParams(body));
        if (url.pathname === '/login') return void res.writeHead(303, { location: '/invoices' }).end();
        if (!invoice) return void res.writeHead(404).end();
        saved.push({ id: invoice, ...fields, paid: fields.paid ? 'yes' : 'no' });
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page('Saved', `<h1>Saved</h1><p>Invoice #${invoice} saved.</p>`));
      });
      return;
    }
    if (url.pathname === '/' && options.open) return void res.writeHead(302, { location: '/invoices' }).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    if (url.pathname === '/') {
      res.end(page('Sign in', '<h1>Sign in</h1><form method="post" action="/login"><label>User <input name="user"></label><label>Password <input type="password" name="password"></label><button>Sign in</button></form>'));
    } else if (url.pathname === '/invoices') {
      const next = FIRST_INVOICE + saved.length;
      const links = [next, ...(options.backlog ? [next + 1] : [])].map((n) => `<li><a href="/invoice/${n}">Invoice #${n}</a></li>`).join('');
      res.end(page('Invoices', `<h1>Invoices</h1><nav><a href="/help">Help</a></nav><p>To complete:</p><ul>${links}</ul>`));
    } else if (invoice) {
      const clamp = options.clampAmount ? "<script>amount.addEventListener('input', () => { if (Number(amount.value) > 5) amount.value = '5'; });</script>" : '';
      res.end(
        page(
          `Invoice #${invoice}`,
          `<h1>Invoice #${invoice}</h1><form method="post">` +
            '<label><input type="checkbox" name="paid" value="yes"> Paid</label>' +
            '<label>Amount <input type="number" id="amount" name="amount"></label>' +
            '<label>Code <input name="code" maxlength="1"></label>' +
            '<label>Currency <select name="currency"><option>EUR</option><option>USD</option><option>GBP</option></select></label>' +
            '<label>Due date <input type="date" name="due"></label>' +
            '<label>Quantity <input name="quantity"></label>' +
            '<label>Copies <input name="copies"></label>' +
            '<label>Priority <input name="priority"></label>' +
            '<label>Tier <input name="tier"></label>' +
            `<button>Save</button></form>${clamp}`,
        ),
      );
    } else res.end(page('Help', '<h1>Help</h1>'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://records.test:${port}`, saved, options, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
