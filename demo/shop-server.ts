import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The demo business app (also the tests' fixture): sign in, then place an order. Serves on 127.0.0.1; tests reach it
 * as http://shop.test:PORT/ through BROWSER_HOST_RULES. Records every form it receives.
 */
export interface ShopServer {
  port: number;
  /** Origin as the browser sees it: http://shop.test:PORT */
  origin: string;
  forms: Array<{ path: string; fields: Record<string, string> }>;
  requests: string[];
  /** The shop's behaviour, changeable while it runs (a new version of the site, same address). */
  options: ShopOptions;
  close(): Promise<void>;
}

const SITE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'shop');

export interface ShopOptions {
  /** Numbers orders A-1001, A-1002, … (default: every order is A-1001, as the demo's recording saw it). */
  sequentialOrders?: boolean;
  /** A later version of the shop: the order page's button is renamed ("Submit order") and moved. */
  renamedButton?: boolean;
}

export async function startShopServer(hostname = 'shop.test', initial: ShopOptions = {}): Promise<ShopServer> {
  const options: ShopOptions = { ...initial };
  const forms: ShopServer['forms'] = [];
  let orders = 0;
  /** Order id → reference, for the receipts. */
  const placed = new Map<string, string>();
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${url.pathname}`);
    if (req.method === 'POST') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const fields = Object.fromEntries(new URLSearchParams(body));
        forms.push({ path: url.pathname, fields });
        if (url.pathname === '/login') {
          res.writeHead(303, { location: '/orders' }).end();
        } else if (url.pathname === '/order') {
          res.writeHead(200, { 'content-type': 'text/html' });
          orders++;
          const id = `A-${1000 + (options.sequentialOrders ? orders : 1)}`;
          placed.set(id, fields.reference ?? '');
          res.end(
            `<!doctype html><title>Order confirmed</title><link rel="stylesheet" href="/shop.css"><h1>Thank you</h1><p class="result">Order ${id} confirmed for ${escapeHtml(fields.reference ?? '')}</p>` +
              `<a class="receipt" href="/receipt/${id}.csv" download>Download the receipt</a>`,
          );
        } else res.writeHead(404).end();
      });
      return;
    }
    const receipt = /^\/receipt\/(A-\d+)\.csv$/.exec(url.pathname);
    if (receipt && placed.has(receipt[1]!)) {
      // The order's receipt, as a file to download (kept as an artifact: docs/files-and-codes.md#downloads).
      res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="receipt-${receipt[1]}.csv"` });
      res.end(`order,reference\n${receipt[1]},${placed.get(receipt[1]!)}\n`);
      return;
    }
    const file = url.pathname === '/' ? 'index.html' : url.pathname === '/orders' ? 'orders.html' : url.pathname.slice(1);
    if (!/^[a-z]+\.(html|css)$/.test(file)) return void res.writeHead(404).end('not found');
    readFile(path.join(SITE, file)).then(
      (data) => {
        res.writeHead(200, { 'content-type': file.endsWith('.css') ? 'text/css' : 'text/html; charset=utf-8' });
        if (options.renamedButton && file === 'orders.html') {
          res.end(String(data).replace('<button class="b1" type="submit">Place order</button>', '<button class="b1" type="submit" style="left: 300px; top: 260px">Submit order</button>'));
          return;
        }
        res.end(data);
      },
      () => res.writeHead(404).end('not found'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://${hostname}:${port}`,
    forms,
    requests,
    options,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
