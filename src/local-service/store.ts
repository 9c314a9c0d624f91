import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import { execution, type ExecutionRow, type ExecutionStatus } from '../contract/executions.js';
import { formatIssues } from '../contract/json.js';
import { storedVersion, storedWorkflow, type VersionRow, type VersionStatus, type VersionTrigger, type WorkflowRow } from '../contract/workflows.js';

/**
 * The local API's state, in Redis so it survives a restart of the API. Layout under `prefix`
 * (default `{api}:`; the braces keep every key in one cluster slot):
 *
 *   seq                          counter ordering everything by creation (ties impossible)
 *   workflows                    zset  workflow id, by creation
 *   slugs                        hash  slug → workflow id
 *   workflow:{id}                hash  workflow fields
 *   workflow:{id}:versions       zset  version id, by version number (the highest is current)
 *   workflow:{id}:executions     zset  execution id, by creation
 *   version:{id}                 hash  version fields
 *   executions                   zset  execution id, by creation
 *   execution:{id}               hash  execution fields
 *
 * Hash values are JSON-encoded, so a field keeps its type (null, number, object) on the way back,
 * and each row is read through its schema (src/contract/), so what the API answers from it is of
 * the shape it declares.
 */

/** Versions stored before triggers existed read as published and manual. */
const TRIGGER_DEFAULTS = { status: 'published', trigger_type: 'manual', schedule_expression: null, configuration: {} } satisfies VersionTrigger;
/** Executions stored before schedules existed were all made by an execute call. */
const EXECUTION_DEFAULTS = { trigger: 'manual' } satisfies Partial<ExecutionRow>;

/** A version with what the store knows of it beside its row: whether it is current, and its workflow's name and description. */
/**
 * A version with what is known of it among its workflow's: `is_current` the newest (an edit starts
 * from it), `runs_by_default` the newest published (what an execute call without a version and the
 * schedule run; docs/api.md#versions).
 */
export type VersionView = VersionRow & { is_current: boolean; runs_by_default: boolean; name: string; description: string };

export type TransitionResult =
  | { kind: 'ok'; execution: ExecutionRow }
  | { kind: 'missing' }
  | { kind: 'conflict'; current: ExecutionStatus };

/**
 * Compare-and-set of an execution's status, atomic in Redis. A repeat of the same final report
 * (same target status and same timestamp) is accepted without change: a client that lost the
 * first answer and retried must not get a 409 for a report that went through.
 *
 * KEYS[1] execution hash. ARGV: target, idempotency field, idempotency value, n, n allowed
 * sources, then field/value pairs to set. All status values are JSON-encoded like the hash.
 */
const TRANSITION_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return {'missing'} end
local current = redis.call('hget', KEYS[1], 'status')
if current == ARGV[1] and ARGV[2] ~= '' and redis.call('hget', KEYS[1], ARGV[2]) == ARGV[3] then
  return {'repeat'}
end
local n = tonumber(ARGV[4])
local allowed = false
for i = 1, n do
  if ARGV[4 + i] == current then allowed = true end
end
if not allowed then return {'conflict', current} end
local fields = {}
for i = 5 + n, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('hset', KEYS[1], 'status', ARGV[1], unpack(fields))
return {'ok'}
`;

export interface ExecutionQuery {
  workflowId?: string;
  status?: ExecutionStatus;
  limit: number;
  offset: number;
}

export function createStore(redis: Redis, prefix = '{api}:') {
  const key = {
    seq: `${prefix}seq`,
    workflows: `${prefix}workflows`,
    slugs: `${prefix}slugs`,
    workflow: (id: string) => `${prefix}workflow:${id}`,
    versions: (id: string) => `${prefix}workflow:${id}:versions`,
    workflowExecutions: (id: string) => `${prefix}workflow:${id}:executions`,
    version: (id: string) => `${prefix}version:${id}`,
    executions: `${prefix}executions`,
    execution: (id: string) => `${prefix}execution:${id}`,
  };

  const encode = (row: object): Record<string, string> => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, JSON.stringify(v ?? null)]));

  /** A row as stored, read through its schema; undefined when the hash is empty (no such row). */
  const decode = <S extends z.ZodType>(schema: S, hash: Record<string, string>, defaults: object = {}): z.output<S> | undefined => {
    if (Object.keys(hash).length === 0) return undefined;
    const fields = { ...defaults, ...Object.fromEntries(Object.entries(hash).map(([k, v]) => [k, JSON.parse(v) as unknown])) };
    const parsed = schema.safeParse(fields);
    if (!parsed.success) throw new Error(`a stored row is not of its shape: ${formatIssues(parsed.error.issues)}`);
    return parsed.data;
  };
  const readWorkflow = (hash: Record<string, string>) => decode(storedWorkflow, hash);
  const readVersion = (hash: Record<string, string>) => decode(storedVersion, hash, TRIGGER_DEFAULTS);
  const readExecution = (hash: Record<string, string>) => decode(execution, hash, EXECUTION_DEFAULTS);

  async function readAll<T>(keys: string[], read: (hash: Record<string, string>) => T | undefined): Promise<T[]> {
    if (keys.length === 0) return [];
    const pipeline = redis.pipeline();
    for (const k of keys) pipeline.hgetall(k);
    const results = (await pipeline.exec()) ?? [];
    const rows: T[] = [];
    for (const [error, hash] of results) {
      if (error) throw error;
      const row = read(hash as Record<string, string>);
      if (row !== undefined) rows.push(row);
    }
    return rows;
  }

  /** Claims a unique slug: the name's, then with a short suffix when taken. */
  async function claimSlug(name: string, workflowId: string): Promise<string> {
    const base = slugify(name) || 'workflow';
    for (let i = 0; i < 5; i += 1) {
      const candidate = i === 0 ? base : `${base}-${randomUUID().slice(0, 6)}`;
      if ((await redis.hsetnx(key.slugs, candidate, workflowId)) === 1) return candidate;
    }
    const fallback = `${base}-${workflowId}`;
    await redis.hset(key.slugs, fallback, workflowId);
    return fallback;
  }

  async function nextSeq(): Promise<number> {
    return redis.incr(key.seq);
  }

  async function getWorkflow(id: string): Promise<WorkflowRow | undefined> {
    return readWorkflow(await redis.hgetall(key.workflow(id)));
  }

  async function listVersions(workflowId: string): Promise<VersionView[]> {
    const workflow = await getWorkflow(workflowId);
    if (!workflow) return [];
    const ids = await redis.zrange(key.versions(workflowId), 0, '-1');
    const rows = await readAll(ids.map(key.version), readVersion);
    const latest = rows.reduce((max, r) => Math.max(max, r.version), 0);
    const runs = rows.reduce((max, r) => (r.status === 'published' ? Math.max(max, r.version) : max), 0);
    return rows.map((row) => ({ ...row, is_current: row.version === latest, runs_by_default: row.version === runs, name: workflow.name, description: workflow.description }));
  }

  async function defaultVersion(workflowId: string): Promise<VersionView | undefined> {
    const versions = await listVersions(workflowId);
    return versions.find((v) => v.runs_by_default);
  }

  async function currentVersion(workflowId: string): Promise<VersionView | undefined> {
    const versions = await listVersions(workflowId);
    return versions.find((v) => v.is_current);
  }

  async function addVersion(workflowId: string, specification: Record<string, unknown>, trigger: VersionTrigger, now: string): Promise<VersionRow> {
    // Encoded before the number is taken, so a row that cannot be encoded takes nothing.
    const draft = { workflow_version_uuid: randomUUID(), workflow_uuid: workflowId, specification, ...trigger, created_at: now, updated_at: now };
    const fields = encode(draft);
    // The number is allocated atomically, so concurrent edits never share one.
    const number = await redis.hincrby(key.workflow(workflowId), 'version_count', 1);
    await written(
      redis
        .multi()
        .hset(key.version(draft.workflow_version_uuid), { ...fields, version: JSON.stringify(number) })
        .zadd(key.versions(workflowId), number, draft.workflow_version_uuid)
        .exec(),
    );
    return { ...draft, version: number };
  }

  /** Waits for a MULTI and throws the first command's error (a failed MULTI writes nothing). */
  async function written(replies: Promise<[Error | null, unknown][] | null>): Promise<void> {
    const results = await replies;
    if (results === null) throw new Error('the Redis transaction was aborted');
    for (const [error] of results) if (error) throw error;
  }

  return {
    getWorkflow,
    listVersions,
    currentVersion,
    defaultVersion,

    async getVersion(id: string): Promise<VersionRow | undefined> {
      return readVersion(await redis.hgetall(key.version(id)));
    },

    /** Publishes or unpublishes a version in place (its content is unchanged, so no new version). */
    async setVersionStatus(id: string, status: VersionStatus): Promise<boolean> {
      const now = new Date().toISOString();
      const reply = await redis.eval(
        "if redis.call('exists', KEYS[1]) == 0 then return 0 end redis.call('hset', KEYS[1], 'status', ARGV[1], 'updated_at', ARGV[2]) return 1",
        1,
        key.version(id),
        JSON.stringify(status),
        JSON.stringify(now),
      );
      return reply === 1;
    },

    async listWorkflows(limit: number, offset: number): Promise<{ items: WorkflowRow[]; total: number }> {
      const [ids, total] = await Promise.all([redis.zrevrange(key.workflows, String(offset), String(offset + limit - 1)), redis.zcard(key.workflows)]);
      return { items: await readAll(ids.map(key.workflow), readWorkflow), total };
    },

    async createWorkflow(input: { name: string; description: string; specification: Record<string, unknown>; trigger?: VersionTrigger }): Promise<WorkflowRow> {
      const id = randomUUID();
      const now = new Date().toISOString();
      const version: VersionRow = { workflow_version_uuid: randomUUID(), workflow_uuid: id, specification: input.specification, version: 1, ...(input.trigger ?? TRIGGER_DEFAULTS), created_at: now, updated_at: now };
      // Encoded first: a version that cannot be written (JSON.stringify throws) leaves nothing, not even a slug.
      const versionFields = encode(version);
      const slug = await claimSlug(input.name, id);
      const row: WorkflowRow = { workflow_uuid: id, name: input.name, description: input.description, slug, created_at: now, updated_at: now };
      try {
        const seq = await nextSeq();
        // The workflow and its first version in one MULTI: both are there, or neither.
        await written(
          redis
            .multi()
            .hset(key.workflow(id), { ...encode(row), version_count: '1' })
            .zadd(key.workflows, seq, id)
            .hset(key.version(version.workflow_version_uuid), versionFields)
            .zadd(key.versions(id), 1, version.workflow_version_uuid)
            .exec(),
        );
      } catch (error) {
        // The slug is ours (claimed above for this id); a workflow that was not written gives it back.
        await redis.hdel(key.slugs, slug).catch(() => undefined);
        throw error;
      }
      return row;
    },

    /** A new version carrying `specification`; name and description change at workflow level. */
    async updateWorkflow(
      id: string,
      changes: { name?: string; description?: string; specification: Record<string, unknown>; trigger?: VersionTrigger },
    ): Promise<WorkflowRow | undefined> {
      const workflow = await getWorkflow(id);
      if (!workflow) return undefined;
      const now = new Date().toISOString();
      const updated: WorkflowRow = { ...workflow, name: changes.name ?? workflow.name, description: changes.description ?? workflow.description, updated_at: now };
      await redis.hset(key.workflow(id), encode({ name: updated.name, description: updated.description, updated_at: now }));
      await addVersion(id, changes.specification, changes.trigger ?? TRIGGER_DEFAULTS, now);
      return updated;
    },

    /** Deletes the workflow, its versions and its executions; answers the executions deleted. */
    async deleteWorkflow(id: string): Promise<ExecutionRow[] | undefined> {
      const workflow = await getWorkflow(id);
      if (!workflow) return undefined;
      const [versionIds, executionIds] = await Promise.all([redis.zrange(key.versions(id), 0, '-1'), redis.zrange(key.workflowExecutions(id), 0, '-1')]);
      const executions = await readAll(executionIds.map(key.execution), readExecution);
      const tx = redis.multi();
      for (const v of versionIds) tx.del(key.version(v));
      for (const e of executionIds) tx.del(key.execution(e));
      if (executionIds.length > 0) tx.zrem(key.executions, ...executionIds);
      tx.del(key.workflow(id), key.versions(id), key.workflowExecutions(id));
      tx.zrem(key.workflows, id);
      tx.hdel(key.slugs, workflow.slug);
      await tx.exec();
      return executions;
    },

    async createExecution(row: ExecutionRow): Promise<void> {
      const seq = await nextSeq();
      await redis
        .multi()
        .hset(key.execution(row.execution_uuid), encode(row))
        .zadd(key.executions, seq, row.execution_uuid)
        .zadd(key.workflowExecutions(row.workflow_uuid), seq, row.execution_uuid)
        .exec();
    },

    /**
     * What a workflow's executions cost together (docs/api.md#cost): the sum of the costs known,
     * and how many executions have one. Read per execution (fine at a local API's scale), so an
     * execution deleted or reported twice is never counted wrong.
     */
    async workflowCost(workflowId: string): Promise<{ usd: number; executions: number }> {
      const ids = await redis.zrange(key.workflowExecutions(workflowId), 0, '-1');
      if (ids.length === 0) return { usd: 0, executions: 0 };
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(key.execution(id), 'cost_usd');
      let micros = 0;
      let executions = 0;
      for (const [error, value] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        const usd = typeof value === 'string' ? (JSON.parse(value) as unknown) : null;
        if (typeof usd !== 'number') continue;
        // In millionths of a dollar (each cost has 6 decimals): the sum has no float drift.
        micros += Math.round(usd * 1_000_000);
        executions += 1;
      }
      return { usd: micros / 1_000_000, executions };
    },

    async getExecution(id: string): Promise<ExecutionRow | undefined> {
      return readExecution(await redis.hgetall(key.execution(id)));
    },

    /** Newest first. A status filter reads the candidates' statuses (fine at a local API's scale). */
    async listExecutions(query: ExecutionQuery): Promise<{ items: ExecutionRow[]; total: number }> {
      const index = query.workflowId !== undefined ? key.workflowExecutions(query.workflowId) : key.executions;
      if (query.status === undefined) {
        const [ids, total] = await Promise.all([redis.zrevrange(index, String(query.offset), String(query.offset + query.limit - 1)), redis.zcard(index)]);
        return { items: await readAll(ids.map(key.execution), readExecution), total };
      }
      const ids = await redis.zrevrange(index, 0, '-1');
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(key.execution(id), 'status');
      const statuses = (await pipeline.exec()) ?? [];
      const wanted = JSON.stringify(query.status);
      const matching = ids.filter((_, i) => statuses[i]?.[1] === wanted);
      const page = matching.slice(query.offset, query.offset + query.limit);
      return { items: await readAll(page.map(key.execution), readExecution), total: matching.length };
    },

    async transition(
      id: string,
      change: { from: readonly ExecutionStatus[]; to: ExecutionStatus; fields: Partial<ExecutionRow>; idempotencyField?: keyof ExecutionRow },
    ): Promise<TransitionResult> {
      const fields = encode({ ...change.fields, updated_at: new Date().toISOString() });
      const idemField = change.idempotencyField ?? '';
      const idemValue = change.idempotencyField ? JSON.stringify(change.fields[change.idempotencyField] ?? null) : '';
      const args = [JSON.stringify(change.to), idemField, idemValue, String(change.from.length), ...change.from.map((s) => JSON.stringify(s)), ...Object.entries(fields).flat()];
      const reply = (await redis.eval(TRANSITION_SCRIPT, 1, key.execution(id), ...args)) as string[];
      if (reply[0] === 'missing') return { kind: 'missing' };
      if (reply[0] === 'conflict') return { kind: 'conflict', current: execution.shape.status.parse(JSON.parse(reply[1] ?? 'null')) };
      const row = readExecution(await redis.hgetall(key.execution(id)));
      return row ? { kind: 'ok', execution: row } : { kind: 'missing' };
    },
  };
}

export type Store = ReturnType<typeof createStore>;

function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
}
