import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody } from '../../src/contract/api-errors.js';
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

/**
 * The CPU time this process (the server runs in it) spends from `since` on, in ms. The bounds
 * below are on CPU time, not on the clock: a loaded machine stretches the clock time of the same
 * work, never its CPU time, and a backtracking or polynomial engine would spend minutes of it.
 */
function cpuMsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/**
 * Watches this process's event loop until `stop()`: `longest()` is the most CPU time (ms) it spent
 * between two turns of its loop (a 5 ms timer firing), the longest stretch in which nothing else
 * (a `/healthz`, another request) could be answered. CPU, like the bounds above: a loaded machine
 * lengthens the clock time between turns, not the CPU time; a check that blocks the loop (a
 * backtracking pattern, a polynomial walk of a body) shows here whatever the total it adds up to.
 */
function watchLoop(): { stop(): number } {
  let last = process.cpuUsage();
  let longest = 0;
  const turn = () => {
    const now = process.cpuUsage();
    longest = Math.max(longest, (now.user - last.user + now.system - last.system) / 1000);
    last = now;
  };
  const ticker = setInterval(turn, 5);
  return {
    stop() {
      clearInterval(ticker);
      turn();
      return longest;
    },
  };
}

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
    const cpu = process.cpuUsage();
    const validating = h.api.as(errorBody)('POST', `/api/workflows/${id}/execute`, { inputPayload: { a: long, b: { [hostile]: 'x' } } });
    const health = await fetch(`${h.server.url}/healthz`);
    expect(health.status).toBe(200);
    const answer = await validating;
    expect(cpuMsSince(cpu)).toBeLessThan(1000);
    expect(answer.status).toBe(422);
    expect(JSON.stringify(answer.body)).toContain('must match pattern');
    const short = await h.api('POST', `/api/workflows/${id}/execute`, { inputPayload: { a: hostile } });
    expect(short.status).toBe(422);
  });

  it('a pattern the linear-time engine cannot run is refused with a reason when the workflow is saved', async () => {
    const res = await h.api.as(errorBody)('POST', '/api/workflows', {
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
    const cpu = process.cpuUsage();
    const result = validate({ a: `${'a'.repeat(40)}!` });
    const elapsed = cpuMsSince(cpu);
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
  it('keeps /healthz answering while the worst bodies the size limit allows are checked, in linear time (CPU, not the clock), and answers each', async () => {
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
    const cpu = process.cpuUsage();
    const loop = watchLoop();
    const checks = cases.map(async (c, i) => {
      const res = await fetch(`${h.server.url}/api/workflows/${ids[i]}/execute`, { method: 'POST', headers: { 'X-Service-Key': API_KEY, 'Content-Type': 'application/json' }, body: bodies[i] });
      answered += 1;
      return { name: c.name, status: res.status, body: await res.text(), expected: c.expected };
    });
    // At most 50 polls: each costs CPU of its own, and on a fast machine the loop would poll
    // hundreds of times, so an open-ended loop would make the CPU bound depend on speed.
    let healthy = 0;
    let healthyWhileChecking = 0;
    while (answered < cases.length && healthy < 50) {
      const health = await fetch(`${h.server.url}/healthz`);
      expect(health.status).toBe(200);
      healthy += 1;
      if (answered < cases.length) healthyWhileChecking += 1;
    }
    const outcomes = await Promise.all(checks);
    const spent = cpuMsSince(cpu);
    const blocked = loop.stop();
    expect(healthyWhileChecking).toBeGreaterThan(0);
    // The loop kept turning: no stretch without a turn took 3 s of CPU (the longest, one 1 MiB
    // body's check, takes about 0.7 s here; a slower or loaded machine may double it), though the checks of all the bodies together take
    // several: the total bound below alone lets one check block the loop for tens of seconds.
    expect(blocked, `the longest stretch without a turn of the event loop took ${Math.round(blocked)} ms of CPU`).toBeLessThan(3000);
    // Linear checks of a 1 MiB body take about 1.5 s of CPU here (JSON, the schema, GC threads
    // included); a backtracking or polynomial engine on the same body takes hours.
    expect(spent, `${cases.length} bodies and ${healthy} /healthz took ${Math.round(spent)} ms of CPU`).toBeLessThan(10_000 * cases.length);
    for (const outcome of outcomes) {
      expect(outcome.status, `${outcome.name}: ${outcome.body.slice(0, 300)}`).toBe(422);
      expect(outcome.body, outcome.name).toMatch(outcome.expected);
    }
  });
});
