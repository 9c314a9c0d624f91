import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abortReason } from '../../src/contract/errors.js';
import { ANSWERS_STREAM_GRACE_MS, answerField, answersStreamKey } from '../../src/domain/human-protocol.js';
import { ANSWERS_CONNECTION_NAME, ANSWERS_READER_CONNECTION_NAME, createRedisHumanDesk } from '../../src/human/redis-desk.js';
import type { HumanDesk } from '../../src/human/types.js';
import type { Logger } from '../../src/telemetry/types.js';
import { deferred } from '../support/deferred.js';
import { startRedis, type TestRedis } from '../support/redis.js';

/**
 * The worker's answers desk on a real Redis (docs/human-in-the-loop.md#the-answers-stream): one
 * reader per process serves every waiting run, so the connections it holds do not grow with the
 * runs that wait; each run hears its own answer; an answer nobody took is left for the run's
 * next question or its end to account for; a Redis restart is survived; streams expire.
 */

let redis: TestRedis;
let client: Redis;
const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];

const logger: Logger = {
  debug: () => undefined,
  info: (fields, msg) => void lines.push({ msg: msg ?? '', fields }),
  warn: (fields, msg) => void lines.push({ msg: msg ?? '', fields }),
  error: (fields, msg) => void lines.push({ msg: msg ?? '', fields }),
  child: () => logger,
};

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { connectionName: 'test-client' });
});
afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

/** Each test its own queue name, so its streams are its own. */
function newDesk(): { desk: HumanDesk; queueName: string; key: (id: string) => string } {
  const queueName = `q-${randomUUID().slice(0, 8)}`;
  return { desk: createRedisHumanDesk({ redisUrl: redis.url, queuePrefix: 'bull', queueName, logger }), queueName, key: (id) => answersStreamKey('bull', queueName, id) };
}

/** The desk's connections to Redis now, by name. */
async function deskConnections(): Promise<string[]> {
  const list = (await client.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name === ANSWERS_CONNECTION_NAME || name === ANSWERS_READER_CONNECTION_NAME)
    .sort();
}

const noInput = async () => undefined;
const forever = new AbortController().signal;

describe('the answers desk on Redis', () => {
  it('serves 60 waiting runs on two connections, each with its own answer', async () => {
    const { desk, key } = newDesk();
    try {
      expect(await deskConnections()).toEqual([]);
      const ids = Array.from({ length: 60 }, (_, i) => `run-${i}`);
      const marks = await Promise.all(ids.map((id) => desk.mark(id)));
      const waits = ids.map((id, i) => desk.wait({ executionId: id, after: marks[i]!, timeoutMs: 120_000, onInput: noInput, signal: forever }));
      // The last run hears its answer: the reader is connected and reading; the 59 others wait on.
      await client.xadd(key(ids[59]!), '*', 'answer', answerField({ answer: 'answer 59', by: 'person 59' }));
      await waits[59];
      expect(await deskConnections()).toEqual([ANSWERS_CONNECTION_NAME, ANSWERS_READER_CONNECTION_NAME]);
      // Answers come in any order, each on its own run's stream.
      for (const i of [...ids.keys()].reverse().slice(1)) await client.xadd(key(ids[i]!), '*', 'answer', answerField({ answer: `answer ${i}`, by: `person ${i}` }));
      const answers = await Promise.all(waits);
      expect(answers.map((a) => [a?.answer, a?.by])).toEqual(ids.map((_, i) => [`answer ${i}`, `person ${i}`]));
      expect(await deskConnections()).toEqual([ANSWERS_CONNECTION_NAME, ANSWERS_READER_CONNECTION_NAME]);
    } finally {
      await desk.close();
    }
    expect(await deskConnections()).toEqual([]);
  });

  it("reads an answer written before the run's stream joined the read, and each run's input in order, one run's slow input holding up no other", async () => {
    const { desk, key } = newDesk();
    try {
      const early = await desk.mark('early');
      // Written after the mark, before the wait starts: it belongs to this question.
      await client.xadd(key('early'), '*', 'answer', answerField({ answer: 'written early' }));
      expect(await desk.wait({ executionId: 'early', after: early, timeoutMs: 60_000, onInput: noInput, signal: forever })).toMatchObject({ answer: 'written early' });

      const release = deferred();
      const firstApplied = deferred();
      const seen: string[] = [];
      const slowMark = await desk.mark('slow');
      const slow = desk.wait({
        executionId: 'slow',
        after: slowMark,
        timeoutMs: 60_000,
        onInput: async (input) => {
          seen.push(input.kind === 'text' ? input.text : input.kind);
          if (seen.length === 1) {
            firstApplied.resolve();
            await release.promise;
          }
        },
        signal: forever,
      });
      await client.xadd(key('slow'), '*', 'input', JSON.stringify({ kind: 'text', text: 'a' }));
      await client.xadd(key('slow'), '*', 'input', JSON.stringify({ kind: 'text', text: 'b' }));
      await client.xadd(key('slow'), '*', 'answer', answerField({ answer: 'done' }));
      await firstApplied.promise;
      expect(seen).toEqual(['a']);
      // The slow run's first input is still being applied; another run hears its answer meanwhile.
      const quickMark = await desk.mark('quick');
      const quick = desk.wait({ executionId: 'quick', after: quickMark, timeoutMs: 60_000, onInput: noInput, signal: forever });
      await client.xadd(key('quick'), '*', 'answer', answerField({ answer: 'quick', decision: null }));
      expect(await quick).toMatchObject({ answer: 'quick' });
      release.resolve();
      expect(await slow).toMatchObject({ answer: 'done' });
      expect(seen).toEqual(['a', 'b']);
    } finally {
      await desk.close();
    }
  });

  it('times out, and stops at once on the run\'s abort; an answer after the wait is left for the run to account for', async () => {
    const { desk, key } = newDesk();
    try {
      const after = await desk.mark('late');
      const started = Date.now();
      expect(await desk.wait({ executionId: 'late', after, timeoutMs: 1_500, onInput: noInput, signal: forever })).toBeUndefined();
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);

      const stop = new AbortController();
      const aborted = desk.wait({ executionId: 'stopped', after: await desk.mark('stopped'), timeoutMs: 600_000, onInput: noInput, signal: stop.signal });
      stop.abort(abortReason('worker_shutdown', 'the worker is shutting down'));
      await expect(aborted).rejects.toMatchObject({ code: 'worker_shutdown' });

      // A run answered, then answered again while it works: the next question starts after it and says it was ignored.
      const first = await desk.mark('twice');
      const waiting = desk.wait({ executionId: 'twice', after: first, timeoutMs: 60_000, onInput: noInput, signal: forever });
      await client.xadd(key('twice'), '*', 'answer', answerField({ answer: 'approve', decision: 'approve', by: 'alice' }));
      const answer = (await waiting)!;
      const second = await client.xadd(key('twice'), '*', 'answer', answerField({ answer: 'deny', decision: 'deny', by: 'mallory' }));
      const next = await desk.mark('twice', answer.id);
      expect(next).toBe(second);
      expect(lines.filter((l) => l.msg.startsWith('answer ignored') && l.fields.executionId === 'twice').map((l) => l.fields.entry)).toEqual([second]);
      // Nor is it read as the answer to the next question.
      expect(await desk.wait({ executionId: 'twice', after: next, timeoutMs: 1_000, onInput: noInput, signal: forever })).toBeUndefined();
      // The run ends: an answer nobody read is logged, and the stream goes.
      const unread = await client.xadd(key('twice'), '*', 'answer', answerField({ answer: 'too late' }));
      await desk.release('twice', next);
      expect(lines.filter((l) => l.msg.startsWith('answer ignored') && l.fields.executionId === 'twice').map((l) => l.fields.entry)).toEqual([second, unread]);
      expect(await client.exists(key('twice'))).toBe(0);
    } finally {
      await desk.close();
    }
  });

  it('gives a waited stream an expiry of its deadline and a grace, refreshed as entries come', async () => {
    const { desk, key } = newDesk();
    try {
      await client.xadd(key('kept'), '*', 'input', JSON.stringify({ kind: 'key', key: 'Tab' }));
      expect(await client.pttl(key('kept'))).toBe(-1);
      const heard = deferred();
      const waiting = desk.wait({ executionId: 'kept', after: '0-0', timeoutMs: 600_000, onInput: async () => heard.resolve(), signal: forever });
      await heard.promise;
      // Cut short by someone: the next arrival sets it again.
      await client.pexpire(key('kept'), 5_000);
      await client.xadd(key('kept'), '*', 'answer', answerField({ answer: 'done' }));
      await waiting;
      // A command on the desk's own connection comes after the expiries it sent, in order.
      await desk.mark('kept');
      const ttl = await client.pttl(key('kept'));
      expect(ttl).toBeGreaterThan(ANSWERS_STREAM_GRACE_MS);
      expect(ttl).toBeLessThanOrEqual(600_000 + ANSWERS_STREAM_GRACE_MS);
    } finally {
      await desk.close();
    }
  });

  it('tells only the run whose stream is not a stream; the others read on', async () => {
    const { desk, key } = newDesk();
    try {
      await client.set(key('broken'), 'not a stream');
      const broken = desk.wait({ executionId: 'broken', after: '0-0', timeoutMs: 60_000, onInput: noInput, signal: forever });
      const fine = desk.wait({ executionId: 'fine', after: await desk.mark('fine'), timeoutMs: 60_000, onInput: noInput, signal: forever });
      await expect(broken).rejects.toThrow(/is a string, not a stream/);
      await client.xadd(key('fine'), '*', 'answer', answerField({ answer: 'still heard' }));
      expect(await fine).toMatchObject({ answer: 'still heard' });
    } finally {
      await desk.close();
    }
  });
});

describe('the answers desk across a Redis restart', () => {
  it('keeps every wait and hears the answers written once Redis is back, on as many connections as before', async () => {
    const { desk, key } = newDesk();
    try {
      const ids = Array.from({ length: 10 }, (_, i) => `restart-${i}`);
      const marks = await Promise.all(ids.map((id) => desk.mark(id)));
      const waits = ids.map((id, i) => desk.wait({ executionId: id, after: marks[i]!, timeoutMs: 300_000, onInput: noInput, signal: forever }));
      // A run answered before the restart: the reader is connected and reading when Redis goes.
      const probe = desk.wait({ executionId: 'probe', after: await desk.mark('probe'), timeoutMs: 300_000, onInput: noInput, signal: forever });
      await client.xadd(key('probe'), '*', 'answer', answerField({ answer: 'before' }));
      expect(await probe).toMatchObject({ answer: 'before' });
      expect(await deskConnections()).toEqual([ANSWERS_CONNECTION_NAME, ANSWERS_READER_CONNECTION_NAME]);
      await redis.restart!();
      // The test's own client reconnects on its next command.
      for (const [i, id] of ids.entries()) await client.xadd(key(id), '*', 'answer', answerField({ answer: `after restart ${i}` }));
      const answers = await Promise.all(waits);
      expect(answers.map((a) => a?.answer)).toEqual(ids.map((_, i) => `after restart ${i}`));
      // The reader is back (it read the answers); a command shows the other one is too.
      await desk.mark('probe');
      expect(await deskConnections()).toEqual([ANSWERS_CONNECTION_NAME, ANSWERS_READER_CONNECTION_NAME]);
    } finally {
      await desk.close();
    }
  });
});
