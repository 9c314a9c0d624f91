import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowList } from '../../src/contract/workflows.js';
import { API_KEY, startHarness, type Harness } from './local-api-harness.js';
import { rawRequest } from './local-api-raw-http.js';

/**
 * DNS rebinding: a request is answered only when its Host names the service (the address it
 * arrived on, a loopback name on loopback, or PUBLIC_HOSTS); anything else is 421 and nothing is
 * done, whatever the credential. Raw requests, so the Host header is exactly the one under test.
 */

let h: Harness;
let port: number;
let address: string;

beforeAll(async () => {
  h = await startHarness({ publicHosts: [{ hostname: 'api.test', port: undefined }, { hostname: 'proxy.test', port: 8443 }], network: true });
  address = new URL(h.server.url).host;
  port = Number(new URL(h.server.url).port);
});

afterAll(async () => {
  await h?.close();
});

const send = (host: string | undefined, target = '/healthz', method = 'GET', headers: Record<string, string> = {}, body?: string) =>
  rawRequest({ method, target, address, ...(host === undefined ? {} : { host }), headers, ...(body === undefined ? {} : { body }) });

describe('the Host a request names', () => {
  it.each(['127.0.0.1:PORT', 'localhost:PORT', 'LOCALHOST:PORT', '[::1]:PORT', 'api.test', 'api.test:1234', 'API.test:PORT', 'proxy.test:8443'])('%s is served', async (host) => {
    const res = await send(host.replace('PORT', String(port)));
    expect(res.status).toBe(200);
  });

  it.each([
    'evil.test:PORT',
    'evil.test',
    '127.0.0.1:1',
    'localhost',
    'proxy.test:9000',
    'proxy.test',
    'api.test.evil.test:PORT',
    'localhost.evil.test:PORT',
    '127.0.0.1.nip.io:PORT',
    'user@127.0.0.1:PORT',
    '127.0.0.1:PORT/x',
    '',
  ])('%j answers 421 and does nothing, even with a key', async (host) => {
    const named = host.replace('PORT', String(port));
    const before = (await h.api.as(workflowList)('GET', '/api/workflows')).body.total;
    const body = JSON.stringify({ prompt: 'p', allowedDomains: ['a.test'] });
    for (const [method, target, headers, sent] of [
      ['GET', '/healthz', {}, undefined],
      ['GET', '/', {}, undefined],
      ['GET', '/api/workflows', { 'X-Service-Key': API_KEY }, undefined],
      ['POST', '/api/workflows', { 'X-Service-Key': API_KEY, 'Content-Type': 'application/json' }, body],
    ] as const) {
      const res = await send(named, target, method, headers, sent);
      expect(res.status, `${method} ${target}`).toBe(421);
      expect(JSON.parse(res.body)).toEqual({ detail: [{ loc: ['header', 'Host'], msg: expect.stringContaining('PUBLIC_HOSTS'), type: 'misdirected_request' }] });
    }
    expect((await h.api.as(workflowList)('GET', '/api/workflows')).body.total).toBe(before);
  });

  it('refuses a request with no Host at all', async () => {
    // HTTP/1.1 requires one (Node answers 400 itself); HTTP/1.0 does not, and the service refuses it.
    expect((await rawRequest({ method: 'GET', target: '/healthz', address, host: null })).status).toBe(400);
    expect((await rawRequest({ method: 'GET', target: '/healthz', address, host: null, httpVersion: '1.0' })).status).toBe(421);
  });

  it('checks the authority of an absolute-form target too', async () => {
    expect((await send(address, `http://${address}/healthz`)).status).toBe(200);
    const res = await send(address, `http://evil.test:${port}/api/workflows`, 'GET', { 'X-Service-Key': API_KEY });
    expect(res.status).toBe(421);
    expect((await send(address, `http://user@${address}/healthz`)).status).toBe(421);
  });
});
