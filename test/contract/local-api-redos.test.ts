import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../../src/contract/workflows.js';
import { MAX_BODY_BYTES } from '../../src/local-service/app.js';
import { compileSchema } from '../../src/domain/json-schema.js';
import { hostileBodies } from '../support/hostile-schemas.js';
import { API_KEY, startHarness, type Harness } from './local-api-harness.js';

/**
 * A payload schema's pattern cannot stall the process (ReDoS): patterns run on a linear-time
 * engine in the local API and in the worker alike. With a backtracking engine, `^(a+)+$` on 40
 * `a`s and a `!` takes longer than the universe's age; here the answer comes back at once.
 */
const HOSTILE = '^(a+)+$';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ network: true });
});
afterAll(async () => {
  await h?.close();
});

describe('hostile schema patterns', () => {
  it('the local API keeps answering /healthz while an input is checked against a hostile pattern, and the check answers 422', async () => {
    const created = await h.api.as(workflow)('POST', '/api/workflows', {
      name: 'ReDoS',
      prompt: 'Nothing',
      allowedDomains: ['shop.test'],
      payloadSchema: { type: 'object', properties: { a: { type: 'string', pattern: HOSTILE }, b: { type: 'object', patternProperties: { [HOSTILE]: { type: 'string' } } } } },
    });
    expect(created.status).toBe(201);
    const id = created.body.workflow_uuid;
    const hostile = `${'a'.repeat(40)}!`;
    const long = `${'a'.repeat(400_000)}!`;
    const validating = h.call('POST', `/api/workflows/${id}/execute`, { inputPayload: { a: long, b: { [hostile]: 'x' } } });
    const sentAt = performance.now();
    const health = await fetch(`${h.server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(performance.now() - sentAt).toBeLessThan(1000);
    const answer = await validating;
    expect(answer.status).toBe(422);
    expect(JSON.stringify(answer.body)).toContain('must match pattern');
    const short = await h.call('POST', `/api/workflows/${id}/execute`, { inputPayload: { a: hostile } });
    expect(short.status).toBe(422);
  });

  it('a pattern the linear-time engine cannot run is refused with a reason when the workflow is saved', async () => {
    const res = await h.call('POST', '/api/workflows', {
      name: 'Lookahead',
      prompt: 'Nothing',
      allowedDomains: ['shop.test'],
      payloadSchema: { type: 'object', properties: { a: { type: 'string', pattern: '^(?=.*\\d)(\\w+)\\1$' } } },
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body)).toMatch(/linear time.*lookaround and backreferences/);
  });

  it('the worker checks an input against a hostile pattern at once', () => {
    const validate = compileSchema({ type: 'object', properties: { a: { type: 'string', pattern: HOSTILE } } });
    const started = performance.now();
    const result = validate({ a: `${'a'.repeat(40)}!` });
    const elapsed = performance.now() - started;
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.errors).toContain('must match pattern');
    expect(elapsed).toBeLessThan(1000);
    expect(validate({ a: 'aaaa' })).toEqual({ ok: true });
  });

  it('keeps each pattern of one schema apart (Ajv keys patterns by their text)', () => {
    const validate = compileSchema({ type: 'object', properties: { a: { type: 'string', pattern: '\\S' }, b: { type: 'string', pattern: '^[^/]+$' } } });
    expect(validate({ a: 'x', b: 'x/y' }).ok).toBe(false);
    expect(validate({ a: 'x', b: 'xy' }).ok).toBe(true);
  });
});

describe('hostile schemas and bodies (docs/secrets.md#bounds)', () => {
  it('keeps /healthz answering within 1 s while the worst bodies the size limit allows are checked, and answers each', async () => {
    const cases = hostileBodies(MAX_BODY_BYTES);
    const ids: string[] = [];
    for (const c of cases) {
      const created = await h.api.as(workflow)('POST', '/api/workflows', { name: c.name, prompt: 'Nothing', allowedDomains: ['shop.test'], payloadSchema: c.schema });
      expect(created.status, c.name).toBe(201);
      ids.push(created.body.workflow_uuid);
    }
    // Bodies made before the clock starts: building them is the test's work, not the server's.
    const bodies = cases.map((c) => `{"inputPayload": ${c.payloadText}}`);
    for (const body of bodies) expect(body.length).toBeLessThanOrEqual(MAX_BODY_BYTES);

    let answered = 0;
    const checks = cases.map(async (c, i) => {
      const res = await fetch(`${h.server.url}/api/workflows/${ids[i]}/execute`, { method: 'POST', headers: { 'X-Service-Key': API_KEY, 'Content-Type': 'application/json' }, body: bodies[i] });
      answered += 1;
      return { name: c.name, status: res.status, body: await res.text(), expected: c.expected };
    });
    const slowest: number[] = [];
    while (answered < cases.length) {
      const sentAt = performance.now();
      const health = await fetch(`${h.server.url}/healthz`);
      expect(health.status).toBe(200);
      slowest.push(performance.now() - sentAt);
    }
    expect(Math.max(...slowest), `each /healthz took ${slowest.map(Math.round).join(', ')} ms`).toBeLessThan(1000);
    for (const outcome of await Promise.all(checks)) {
      expect(outcome.status, `${outcome.name}: ${outcome.body.slice(0, 300)}`).toBe(422);
      expect(outcome.body, outcome.name).toMatch(outcome.expected);
    }
  });
});
