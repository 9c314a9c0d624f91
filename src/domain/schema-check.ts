import { Worker } from 'node:worker_threads';
import type { ErrorObject } from 'ajv';
import { depthProblem } from '../contract/json-bounds.js';
import type { SecretMark } from './secret-marks.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * Schemas applied to values with a bound (docs/secrets.md#bounds). A payload schema comes from
 * whoever wrote the workflow and the payload from whoever calls it; together they can make
 * validation cost anything: `uniqueItems` on objects compares every pair, `anyOf` over a
 * recursive `$ref` doubles at each level of nesting, `patternProperties` times every key...
 * Rather than list the keywords that cost too much (the list is never complete), the check runs
 * where its cost cannot stop anything else:
 *
 * - in a worker thread (schema-thread.ts), so the event loop of the worker and of the local API
 *   keeps answering (`/healthz`, lock renewals, other requests) however long a check takes;
 * - within a time budget (`budgetMs`, 5 s by default): a check still running then has its thread
 *   ended (`Worker.terminate` stops JavaScript wherever it is) and answers `too_slow`;
 * - on a value and a schema at most `MAX_DEPTH` levels deep (json-bounds.ts), measured here
 *   before either is sent (a loop, not a recursion): deeper ones are refused, so no recursive
 *   walk, structured clone's included, runs out of stack;
 * - and whatever goes wrong in sending or in the thread answers `failed`: every call resolves,
 *   none leaves a rejection that nothing awaits (which would end the process).
 *
 * The thread also finds the schema's secret marks on the value (secret-marks.ts): that walk is
 * bounded by the schema's size times the value's, and the same budget covers it.
 */

export const DEFAULT_BUDGET_MS = 5_000;

export type CheckOutcome =
  | { kind: 'checked'; valid: boolean; errors: ErrorObject[]; text: string; marks?: SecretMark[] }
  | { kind: 'invalid_schema'; reason: string }
  | { kind: 'too_deep'; reason: string }
  | { kind: 'too_slow'; reason: string }
  | { kind: 'failed'; reason: string; code?: string };

/** What the thread is sent. */
export interface CheckRequest {
  id: number;
  op: 'check' | 'compile';
  schema: JsonSchema;
  value?: unknown;
  marks?: boolean;
}

/** What the thread answers. */
export type CheckReply =
  | { id: number; kind: 'compiled' }
  | { id: number; kind: 'checked'; valid: boolean; errors: ErrorObject[]; text: string; marks?: SecretMark[] }
  | { id: number; kind: 'invalid_schema'; reason: string }
  | { id: number; kind: 'failed'; reason: string; code?: string };

export interface SchemaChecker {
  /** Applies `schema` to `value`; with `marks`, also finds its secret marks on the value. */
  check(schema: JsonSchema, value: unknown, options?: { marks?: boolean }): Promise<CheckOutcome>;
  /** Whether `schema` compiles (a reason when it does not). */
  compile(schema: JsonSchema): Promise<{ ok: true } | { ok: false; reason: string }>;
  close(): Promise<void>;
}

export interface SchemaCheckerOptions {
  budgetMs?: number;
  /** Checks run at once, one thread each. Default 2. */
  threads?: number;
}

interface Job {
  request: Omit<CheckRequest, 'id'>;
  resolve(reply: CheckReply | { kind: 'too_slow' }): void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
}

export function createSchemaChecker(options: SchemaCheckerOptions = {}): SchemaChecker {
  const budgetMs = options.budgetMs ?? DEFAULT_BUDGET_MS;
  const size = Math.max(1, options.threads ?? 2);
  const slots = new Set<Slot>();
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  const startSlot = (): Slot => {
    const worker = startThread();
    // The thread never keeps the process alive: a worker or API that is done exits.
    worker.unref();
    const slot: Slot = { worker, busy: false, ready: Promise.resolve() };
    // An error the thread did not catch ends it; the check it ran answers `failed` (its exit).
    worker.on('error', () => slots.delete(slot));
    slot.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: { kind?: string }) => {
        if (message.kind !== 'ready') return;
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', () => {
        slots.delete(slot);
        reject(new Error('the schema check thread ended before it was ready'));
      });
    });
    // A start that fails is reported by the job that waited for it.
    slot.ready.catch(() => undefined);
    slots.add(slot);
    return slot;
  };

  /** Runs one job on `slot`; always resolves the job, never rejects (a send that throws answers `failed`). */
  const run = async (slot: Slot, job: Job): Promise<void> => {
    try {
      job.resolve(await exchange(slot, job));
    } catch (error) {
      // Only a fault of this code lands here; the job still gets an answer and the slot is let go.
      slots.delete(slot);
      void slot.worker.terminate().catch(() => undefined);
      job.resolve({ id: 0, kind: 'failed', reason: `the schema check failed: ${reasonOf(error)}` });
    }
  };

  const exchange = async (slot: Slot, job: Job): Promise<CheckReply | { kind: 'too_slow' }> => {
    slot.busy = true;
    try {
      await slot.ready;
    } catch (error) {
      slots.delete(slot);
      return { id: 0, kind: 'failed', reason: `the schema check thread could not start: ${reasonOf(error)}` };
    }
    const id = nextId++;
    const reply = await new Promise<CheckReply | { kind: 'too_slow' }>((resolve) => {
      // The budget starts once the thread has the request: a thread's own start is not the check's cost.
      const timer = setTimeout(() => {
        cleanup();
        slots.delete(slot);
        void slot.worker.terminate();
        resolve({ kind: 'too_slow' });
      }, budgetMs);
      const onMessage = (message: CheckReply) => {
        if (message.id !== id) return;
        cleanup();
        resolve(message);
      };
      const onExit = () => {
        cleanup();
        slots.delete(slot);
        resolve({ id, kind: 'failed', reason: 'the schema check thread ended during the check' });
      };
      const cleanup = () => {
        clearTimeout(timer);
        slot.worker.off('message', onMessage);
        slot.worker.off('exit', onExit);
      };
      slot.worker.on('message', onMessage);
      slot.worker.once('exit', onExit);
      try {
        slot.worker.postMessage({ ...job.request, id } satisfies CheckRequest);
      } catch (error) {
        // Structured clone refused the request (a value it cannot copy, or one that overflows its
        // stack): nothing reached the thread, which stays usable.
        cleanup();
        resolve({ id, kind: 'failed', reason: `the request could not be sent to the schema check thread: ${reasonOf(error)}` });
      }
    });
    slot.busy = false;
    return reply;
  };

  const pump = (): void => {
    while (queue.length > 0 && !closed) {
      let slot: Slot | undefined;
      try {
        slot = [...slots].find((s) => !s.busy) ?? (slots.size < size ? startSlot() : undefined);
      } catch (error) {
        // A thread that cannot even be made (`new Worker` threw): the job answers so, now.
        queue.shift()!.resolve({ id: 0, kind: 'failed', reason: `the schema check thread could not start: ${reasonOf(error)}` });
        continue;
      }
      if (!slot) return;
      const job = queue.shift()!;
      // run() never rejects, so this chain has no rejection for nobody to handle.
      void run(slot, job).then(pump);
    }
  };

  const submit = (request: Omit<CheckRequest, 'id'>): Promise<CheckReply | { kind: 'too_slow' }> => {
    if (closed) return Promise.resolve({ id: 0, kind: 'failed', reason: 'the schema checker is closed' });
    return new Promise((resolve) => {
      queue.push({ request, resolve });
      pump();
    });
  };

  const tooSlow = `it could not be checked within ${budgetMs / 1000} s`;

  return {
    async check(schema, value, opts = {}) {
      const deepSchema = depthProblem(schema);
      if (deepSchema) return { kind: 'invalid_schema', reason: `the schema is refused: ${deepSchema}` };
      const deep = depthProblem(value);
      if (deep) return { kind: 'too_deep', reason: deep };
      const reply = await submit({ op: 'check', schema, value, marks: opts.marks ?? false });
      if (reply.kind === 'too_slow') return { kind: 'too_slow', reason: tooSlow };
      if (reply.kind === 'compiled') return { kind: 'failed', reason: 'the check answered a compile' };
      const { id: _id, ...outcome } = reply;
      return outcome;
    },
    async compile(schema) {
      const deep = depthProblem(schema);
      if (deep) return { ok: false, reason: `the schema is refused: ${deep}` };
      const reply = await submit({ op: 'compile', schema });
      if (reply.kind === 'compiled') return { ok: true };
      if (reply.kind === 'invalid_schema') return { ok: false, reason: reply.reason };
      if (reply.kind === 'too_slow') return { ok: false, reason: `the schema ${tooSlow}` };
      return { ok: false, reason: reply.kind === 'failed' ? reply.reason : 'the schema could not be compiled' };
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.resolve({ id: 0, kind: 'failed', reason: 'the schema checker is closed' });
      await Promise.allSettled([...slots].map((slot) => slot.worker.terminate()));
      slots.clear();
    },
  };
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The thread, from the built `.js` next to this file; or, when this file runs as TypeScript
 * (the tests, `tsx`), its `.ts` through tsx's loader, registered in the thread (a worker thread
 * does not inherit the parent's loader).
 */
function startThread(): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./schema-thread.js', here));
  const target = new URL('./schema-thread.ts', here).href;
  return new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(target)}); });`, { eval: true });
}

let shared: SchemaChecker | undefined;

/** The process's checker, started at its first use. */
export function sharedSchemaChecker(): SchemaChecker {
  shared ??= createSchemaChecker();
  return shared;
}
