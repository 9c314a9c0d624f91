import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { freePort, spawnRedisProcess, terminate } from '../../demo/local-redis.js';

/**
 * A real Redis Sentinel set for fail-over tests: a primary, one replica and one sentinel
 * (quorum 1), each a `redis-server` process on a free port, in memory only. `failover` asks the
 * sentinel to promote the replica and resolves once it announced the new primary.
 */

export const PRIMARY_NAME = 'workerprimary';

export interface SentinelSet {
  /** `redis+sentinel://127.0.0.1:PORT/PRIMARY_NAME` */
  url: string;
  /** Port of the current primary. */
  primaryPort(): Promise<number>;
  /** Promotes the replica; resolves with the new primary's port once the sentinel switched. */
  failover(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSentinelSet(dir: string): Promise<SentinelSet> {
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.allSettled(children.map((c) => terminate(c)));
  };
  try {
    const [primaryPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
    // --dir: a replica stores the primary's snapshot there while it syncs.
    const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', '', '--dir', dir];
    children.push(await spawnRedisProcess(['--port', String(primaryPort), ...common], /Ready to accept connections/));
    children.push(await spawnRedisProcess(['--port', String(replicaPort), '--replicaof', '127.0.0.1', String(primaryPort), ...common], /MASTER <-> REPLICA sync: Finished with success/));
    const conf = `${dir}/sentinel-${sentinelPort}.conf`;
    await writeFile(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 1`,
        `sentinel down-after-milliseconds ${PRIMARY_NAME} 2000`,
        `sentinel failover-timeout ${PRIMARY_NAME} 10000`,
        '',
      ].join('\n'),
    );
    children.push(await spawnRedisProcess([conf, '--sentinel', '--logfile', ''], /\+monitor master/));

    const sentinel = new Redis({ port: sentinelPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
    await sentinel.connect();
    const primaryPortNow = async () => Number(((await sentinel.call('SENTINEL', 'get-master-addr-by-name', PRIMARY_NAME)) as string[])[1]);
    // The sentinel learns of the replica from the primary's INFO (every 10 s at first).
    await waitFor('the sentinel to know the replica', async () => {
      const replicas = (await sentinel.call('SENTINEL', 'replicas', PRIMARY_NAME)) as string[][];
      return replicas.some((fields) => fields.includes(String(replicaPort)) && !fields[fields.indexOf('flags') + 1]!.includes('down'));
    });
    const set: SentinelSet = {
      url: `redis+sentinel://127.0.0.1:${sentinelPort}/${PRIMARY_NAME}`,
      primaryPort: primaryPortNow,
      async failover() {
        const before = await primaryPortNow();
        const events = new Redis({ port: sentinelPort, host: '127.0.0.1' });
        try {
          const switched = new Promise<number>((resolve) => {
            events.on('message', (_channel: string, message: string) => {
              // "<name> <old-ip> <old-port> <new-ip> <new-port>"
              const parts = message.split(' ');
              if (parts[0] === PRIMARY_NAME && Number(parts[4]) !== before) resolve(Number(parts[4]));
            });
          });
          await events.subscribe('+switch-master');
          await sentinel.call('SENTINEL', 'failover', PRIMARY_NAME);
          return await switched;
        } finally {
          events.disconnect();
        }
      },
      async stop() {
        sentinel.disconnect();
        await stop();
      },
    };
    return set;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Polls a condition without an event of its own (bounded, generous). */
async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
