import { execFile, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import { freePort, spawnRedisProcess, terminate } from '../../demo/local-redis.js';

/**
 * A real Redis Sentinel set for fail-over tests: a primary, one replica and one sentinel
 * (quorum 1), each a `redis-server` process on a free port, in memory only. `failover` asks the
 * sentinel to promote the replica and resolves once it announced the new primary.
 *
 * With `tls`, every one of them listens over TLS only (`--port 0 --tls-port …`, Debian's
 * redis-server is built with TLS), the replica and the sentinel reach the primary over TLS
 * too, and the set's url is `rediss+sentinel://`.
 */

/** A CA and a certificate it signed for 127.0.0.1 and localhost, made with openssl for one test. */
export interface TestCertificates {
  caFile: string;
  ca: string;
  certFile: string;
  keyFile: string;
}

export async function makeTestCertificates(dir: string): Promise<TestCertificates> {
  const run = promisify(execFile);
  const at = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.crt'), '-days', '2', '-subj', '/CN=execution-worker test CA']);
  await run('openssl', ['req', ...ec, '-keyout', at('redis.key'), '-out', at('redis.csr'), '-subj', '/CN=127.0.0.1']);
  await writeFile(at('redis.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await run('openssl', ['x509', '-req', '-in', at('redis.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('redis.crt'), '-days', '2', '-extfile', at('redis.ext')]);
  return { caFile: at('ca.crt'), ca: await readFile(at('ca.crt'), 'utf8'), certFile: at('redis.crt'), keyFile: at('redis.key') };
}

export const PRIMARY_NAME = 'workerprimary';

export interface SentinelSet {
  /** `redis+sentinel://127.0.0.1:PORT/PRIMARY_NAME` (`rediss+sentinel://` with TLS) */
  url: string;
  /** What a client of this process needs on top of the url's options: the test CA, with TLS. */
  clientOptions: RedisOptions;
  /** Port of the current primary. */
  primaryPort(): Promise<number>;
  /** Promotes the replica; resolves with the new primary's port once the sentinel switched. */
  failover(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSentinelSet(dir: string, options: { tls?: TestCertificates } = {}): Promise<SentinelSet> {
  const { tls } = options;
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.allSettled(children.map((c) => terminate(c)));
  };
  try {
    const [primaryPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
    // TLS only: no plain port, certificates of the test CA, TLS between the servers as well.
    const tlsSettings = tls ? { 'tls-cert-file': tls.certFile, 'tls-key-file': tls.keyFile, 'tls-ca-cert-file': tls.caFile, 'tls-auth-clients': 'no', 'tls-replication': 'yes' } : {};
    const listen = (port: number) => (tls ? ['--port', '0', '--tls-port', String(port), ...Object.entries(tlsSettings).flatMap(([k, v]) => [`--${k}`, v])] : ['--port', String(port)]);
    // --dir: a replica stores the primary's snapshot there while it syncs.
    const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', '', '--dir', dir];
    children.push(await spawnRedisProcess([...listen(primaryPort), ...common], /Ready to accept connections/));
    children.push(await spawnRedisProcess([...listen(replicaPort), '--replicaof', '127.0.0.1', String(primaryPort), ...common], /MASTER <-> REPLICA sync: Finished with success/));
    const conf = `${dir}/sentinel-${sentinelPort}.conf`;
    await writeFile(
      conf,
      [
        ...(tls ? ['port 0', `tls-port ${sentinelPort}`, ...Object.entries(tlsSettings).map(([k, v]) => `${k} ${v}`)] : [`port ${sentinelPort}`]),
        'bind 127.0.0.1',
        `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 1`,
        `sentinel down-after-milliseconds ${PRIMARY_NAME} 2000`,
        `sentinel failover-timeout ${PRIMARY_NAME} 10000`,
        '',
      ].join('\n'),
    );
    children.push(await spawnRedisProcess([conf, '--sentinel', '--logfile', ''], /\+monitor master/));

    const clientTls = tls ? { tls: { ca: tls.ca } } : {};
    const sentinel = new Redis({ port: sentinelPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, ...clientTls });
    await sentinel.connect();
    const primaryPortNow = async () => Number(((await sentinel.call('SENTINEL', 'get-master-addr-by-name', PRIMARY_NAME)) as string[])[1]);
    // The sentinel learns of the replica from the primary's INFO (every 10 s at first).
    await waitFor('the sentinel to know the replica', async () => {
      const replicas = (await sentinel.call('SENTINEL', 'replicas', PRIMARY_NAME)) as string[][];
      return replicas.some((fields) => fields.includes(String(replicaPort)) && !fields[fields.indexOf('flags') + 1]!.includes('down'));
    });
    const set: SentinelSet = {
      url: `${tls ? 'rediss' : 'redis'}+sentinel://127.0.0.1:${sentinelPort}/${PRIMARY_NAME}`,
      clientOptions: tls ? { tls: { ca: tls.ca }, sentinelTLS: { ca: tls.ca } } : {},
      primaryPort: primaryPortNow,
      async failover() {
        const before = await primaryPortNow();
        const events = new Redis({ port: sentinelPort, host: '127.0.0.1', ...clientTls });
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
