import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

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
 * Hash values are JSON-encoded, so a field keeps its type (null, number, object) on the way back.
 */

export const EXECUTION_STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export interface WorkflowRow {
  workflow_uuid: string;
  name: string;
  description: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

export type VersionStatus = 'draft' | 'published';

/** How a version is run, and whether it may be (docs/api.md#triggers). */
export interface VersionTrigger {
  /** `published` unless the version was created as a draft; a draft is never executed. */
  status: VersionStatus;
  trigger_type: 'manual' | 'schedule';
  /** The cron expression of a `schedule` version; null for `manual`. */
  schedule_expression: string | null;
  /**
   * Free-form; `inputPayload` in it is the version's default input, stored with each secret as
   * its placeholder (default-input.ts).
   */
  configuration: Record<string, unknown>;
  /**
   * The default input's secret values, sealed with PROFILE_KEYS (default-input.ts); null when it
   * has none. Absent on versions stored before secrets were kept apart. Never answered.
   */
  input_secrets?: string | null;
}

export interface VersionRow extends VersionTrigger {
  workflow_version_uuid: string;
  workflow_uuid: string;
  specification: Record<string, unknown>;
  version: number;
  created_at: string;
  updated_at: string;
}

/** Versions stored before triggers existed read as published and manual. */
const TRIGGER_DEFAULTS: VersionTrigger = { status: 'published', trigger_type: 'manual', schedule_expression: null, configuration: {} };

/** A version as the API returns it: the stored row plus `is_current` and workflow-level fields. */
export interface VersionView extends VersionRow {
  is_current: boolean;
  name: string;
  description: string;
}

export interface ExecutionRow {
  execution_uuid: string;
  workflow_version_uuid: string;
  workflow_uuid: string;
  workflow_name: string;
  version: number;
  created_at: string;
  updated_at: string;
  status: ExecutionStatus;
  /** What created it: an API call (`manual`) or its version's schedule. */
  trigger: 'manual' | 'schedule';
  input_payload: unknown;
  duration_ms: number | null;
  n_steps: number;
  n_agent_actions: number;
  n_screenshots: number;
  output_url: string | null;
  video_url: string | null;
  logs_url: string | null;
  started_at: string | null;
  completed_at: string | null;
  failed_at: string | null;
  error: { code: string; message: string } | null;
  /** The run's estimated model cost, from its output.json when it ended (run-cost.ts); null when unknown. */
  cost_usd?: number | null;
  /** While the run waits for a person: what it asks (docs/human-in-the-loop.md). */
  waiting?: { kind: string; question: string; choices: string[] | null; waitingAt: string; timeoutAt: string | null } | null;
  /** When the run last waited for a person, and who answered. */
  waiting_at?: string | null;
  resumed_at?: string | null;
  answered_by?: string | null;
}

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

  const decode = <T>(hash: Record<string, string>): T | undefined => {
    if (Object.keys(hash).length === 0) return undefined;
    return Object.fromEntries(Object.entries(hash).map(([k, v]) => [k, JSON.parse(v) as unknown])) as T;
  };

  async function readAll<T>(keys: string[]): Promise<T[]> {
    if (keys.length === 0) return [];
    const pipeline = redis.pipeline();
    for (const k of keys) pipeline.hgetall(k);
    const results = (await pipeline.exec()) ?? [];
    const rows: T[] = [];
    for (const [error, hash] of results) {
      if (error) throw error;
      const row = decode<T>(hash as Record<string, string>);
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
    return decode<WorkflowRow>(await redis.hgetall(key.workflow(id)));
  }

  async function listVersions(workflowId: string): Promise<VersionView[]> {
    const workflow = await getWorkflow(workflowId);
    if (!workflow) return [];
    const ids = await redis.zrange(key.versions(workflowId), 0, '-1');
    const rows = (await readAll<VersionRow>(ids.map(key.version))).map((row) => ({ ...TRIGGER_DEFAULTS, ...row }));
    const latest = rows.reduce((max, r) => Math.max(max, r.version), 0);
    return rows.map((row) => ({ ...row, is_current: row.version === latest, name: workflow.name, description: workflow.description }));
  }

  async function currentVersion(workflowId: string): Promise<VersionView | undefined> {
    const versions = await listVersions(workflowId);
    return versions.find((v) => v.is_current);
  }

  async function addVersion(workflowId: string, specification: Record<string, unknown>, trigger: VersionTrigger, now: string): Promise<VersionRow> {
    // The number is allocated atomically, so concurrent edits never share one.
    const number = await redis.hincrby(key.workflow(workflowId), 'version_count', 1);
    const row: VersionRow = {
      workflow_version_uuid: randomUUID(),
      workflow_uuid: workflowId,
      specification,
      version: number,
      ...trigger,
      created_at: now,
      updated_at: now,
    };
    await redis.multi().hset(key.version(row.workflow_version_uuid), encode(row)).zadd(key.versions(workflowId), number, row.workflow_version_uuid).exec();
    return row;
  }

  return {
    getWorkflow,
    listVersions,
    currentVersion,

    async getVersion(id: string): Promise<VersionRow | undefined> {
      const row = decode<VersionRow>(await redis.hgetall(key.version(id)));
      return row && { ...TRIGGER_DEFAULTS, ...row };
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
      return { items: await readAll<WorkflowRow>(ids.map(key.workflow)), total };
    },

    async createWorkflow(input: { name: string; description: string; specification: Record<string, unknown>; trigger?: VersionTrigger }): Promise<WorkflowRow> {
      const id = randomUUID();
      const now = new Date().toISOString();
      const row: WorkflowRow = { workflow_uuid: id, name: input.name, description: input.description, slug: await claimSlug(input.name, id), created_at: now, updated_at: now };
      await redis.multi().hset(key.workflow(id), encode(row)).zadd(key.workflows, await nextSeq(), id).exec();
      await addVersion(id, input.specification, input.trigger ?? TRIGGER_DEFAULTS, now);
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
      const executions = await readAll<ExecutionRow>(executionIds.map(key.execution));
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
      return decode<ExecutionRow>(await redis.hgetall(key.execution(id)));
    },

    /** Newest first. A status filter reads the candidates' statuses (fine at a local API's scale). */
    async listExecutions(query: ExecutionQuery): Promise<{ items: ExecutionRow[]; total: number }> {
      const index = query.workflowId !== undefined ? key.workflowExecutions(query.workflowId) : key.executions;
      if (query.status === undefined) {
        const [ids, total] = await Promise.all([redis.zrevrange(index, String(query.offset), String(query.offset + query.limit - 1)), redis.zcard(index)]);
        return { items: await readAll<ExecutionRow>(ids.map(key.execution)), total };
      }
      const ids = await redis.zrevrange(index, 0, '-1');
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(key.execution(id), 'status');
      const statuses = (await pipeline.exec()) ?? [];
      const wanted = JSON.stringify(query.status);
      const matching = ids.filter((_, i) => statuses[i]?.[1] === wanted);
      const page = matching.slice(query.offset, query.offset + query.limit);
      return { items: await readAll<ExecutionRow>(page.map(key.execution)), total: matching.length };
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
      if (reply[0] === 'conflict') return { kind: 'conflict', current: JSON.parse(reply[1] ?? 'null') as ExecutionStatus };
      const execution = decode<ExecutionRow>(await redis.hgetall(key.execution(id)));
      return execution ? { kind: 'ok', execution } : { kind: 'missing' };
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
