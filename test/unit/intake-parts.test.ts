import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/contract/errors.js';
import { createAdmissionGate } from '../../src/intake/admission-gate.js';
import { withoutSecrets } from '../../src/intake/job-secrets.js';
import { createLockWatchdog } from '../../src/intake/lock-watchdog.js';
import { isLostJob } from '../../src/intake/lost-jobs.js';
import { createRunningJobs } from '../../src/intake/running-jobs.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

/** The intake's parts on their own (src/intake/): the BullMQ wiring is tested on a real Redis. */

const logger = createSilentLogger();

describe('running jobs', () => {
  it('is idle at once with nothing running, and becomes idle when the last one goes', async () => {
    const running = createRunningJobs();
    expect(await running.whenIdle(new AbortController().signal)).toBe(true);
    running.add('a', 'exec-a');
    running.add('b', 'exec-b');
    const idle = running.whenIdle(new AbortController().signal);
    running.delete('a');
    expect(running.size).toBe(1);
    running.delete('b');
    await expect(idle).resolves.toBe(true);
  });

  it('answers false when its signal fires first, and stops listening', async () => {
    const running = createRunningJobs();
    running.add('a', 'exec-a');
    const grace = new AbortController();
    const idle = running.whenIdle(grace.signal);
    grace.abort();
    await expect(idle).resolves.toBe(false);
    await expect(running.whenIdle(grace.signal)).resolves.toBe(false);
    running.delete('a');
    await expect(running.whenIdle(grace.signal)).resolves.toBe(true);
  });

  it('gives each run a signal that BullMQ’s own signal or abortAll stops, once', () => {
    const running = createRunningJobs();
    const bull = new AbortController();
    const { signal: first } = running.add('a', 'exec-a', bull.signal);
    const { signal: second, job } = running.add('b', 'exec-b');
    expect(running.runsExecution('exec-b')).toBe(true);
    expect(running.runsExecution('exec-c')).toBe(false);
    bull.abort(new Error('lock lost'));
    expect(first.aborted).toBe(true);
    expect(second.aborted).toBe(false);
    const reason = new Error('shutdown');
    running.abortAll(reason);
    running.abortAll(new Error('again'));
    expect(second.reason).toBe(reason);
    expect(job.controller.signal.reason).toBe(reason);
  });
});

describe('the lock watchdog', () => {
  function rig(exists: boolean) {
    let now = 1_000;
    const running = createRunningJobs();
    const watchdog = createLockWatchdog({ lockDurationMs: 5_000, logger, jobExists: async () => exists, nowMs: () => now });
    const { job, signal } = running.add('job-1', 'exec-1');
    watchdog.track('job-1', job);
    return { watchdog, signal, advance: (ms: number) => (now += ms) };
  }

  it('stops a run whose lock went unrenewed for longer than it lives, with worker_lost', () => {
    const { watchdog, signal, advance } = rig(true);
    advance(4_000);
    watchdog.renewed(['job-1']);
    advance(4_000);
    watchdog.check();
    expect(signal.aborted).toBe(false);
    advance(1_001);
    watchdog.check();
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(ExecutionError);
    expect((signal.reason as ExecutionError).code).toBe('worker_lost');
  });

  it('stops a run whose renewal was refused while Redis still has the job', async () => {
    const { watchdog, signal } = rig(true);
    await watchdog.renewalFailed('job-1');
    expect((signal.reason as ExecutionError).code).toBe('worker_lost');
  });

  it('lets a run finish without a lock once Redis has lost the job itself, however long it takes', async () => {
    const { watchdog, signal, advance } = rig(false);
    await watchdog.renewalFailed('job-1');
    advance(60_000);
    watchdog.check();
    expect(signal.aborted).toBe(false);
  });

  it('leaves a run it no longer tracks alone', () => {
    const { watchdog, signal, advance } = rig(true);
    watchdog.untrack('job-1');
    advance(60_000);
    watchdog.check();
    expect(signal.aborted).toBe(false);
  });
});

describe('the admission gate', () => {
  it('lowers BullMQ’s concurrency to the runs in hand without room, and raises it with room', () => {
    let room = true;
    let active = 0;
    const dial = { concurrency: 4 };
    const gate = createAdmissionGate({ admission: { hasRoom: () => room }, concurrency: 4, dial, active: () => active, logger, recheckMs: 3_600_000 });
    try {
      active = 2;
      room = false;
      expect(gate.hasRoom()).toBe(false);
      gate.adjust();
      expect(dial.concurrency).toBe(2);
      active = 0;
      gate.adjust();
      // Running nothing, a worker still takes one.
      expect(dial.concurrency).toBe(1);
      room = true;
      gate.adjust();
      expect(dial.concurrency).toBe(4);
    } finally {
      gate.close();
    }
  });

  it('always has room without an admission, and never turns the dial', () => {
    const dial = { concurrency: 3 };
    const gate = createAdmissionGate({ admission: undefined, concurrency: 3, dial, active: () => 99, logger, recheckMs: 1 });
    gate.adjust();
    expect(gate.hasRoom()).toBe(true);
    expect(dial.concurrency).toBe(3);
    gate.close();
  });
});

describe('the job’s secrets', () => {
  const json = fc.jsonValue();
  const otherFields = fc.dictionary(fc.string().filter((k) => k !== 'inputPayload' && k !== '__proto__'), json);

  it('replaces the input with its masked copy, or drops it, and keeps every other field', () => {
    fc.assert(
      fc.property(otherFields, json, fc.option(json, { nil: undefined }), (rest, input, masked) => {
        const data = { ...rest, inputPayload: input };
        const scrubbed = withoutSecrets(data, masked)!;
        expect(scrubbed).toEqual(masked === undefined ? rest : { ...rest, inputPayload: masked });
        if (masked === undefined) expect(Object.hasOwn(scrubbed, 'inputPayload')).toBe(false);
      }),
    );
  });

  it('leaves data without an input of its own as it is', () => {
    fc.assert(
      fc.property(fc.oneof(json, otherFields), (data) => {
        expect(withoutSecrets(data, 'masked')).toBeUndefined();
      }),
    );
    expect(withoutSecrets(Object.create({ inputPayload: 'inherited' }), undefined)).toBeUndefined();
  });
});

describe('a lost job', () => {
  it('is one BullMQ counted as stalled and failed for it, never one that failed otherwise', () => {
    expect(isLostJob({ stalledCounter: 1, deferredFailure: 'job stalled more than allowable limit' })).toBe(true);
    expect(isLostJob({ stalledCounter: 0, deferredFailure: undefined as unknown as string })).toBe(false);
    // A job the intake failed itself (no readable execution id): never stalled.
    expect(isLostJob({ stalledCounter: 0, deferredFailure: '' })).toBe(false);
    expect(isLostJob({ stalledCounter: 1, deferredFailure: undefined as unknown as string })).toBe(false);
  });
});
