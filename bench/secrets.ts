/**
 * `npm run bench -- secrets`: hiding the secrets of an input with many of them — a default input
 * sealed by the local API (`sealDefaultInput`, then opened again by `revealDefaultInput`) and a
 * run's vault (`createSecretVault`) — for inputs of 10,000 and 40,000 secret fields, as an
 * `additionalProperties` schema marked `writeOnly` makes them. Each is one pass over the input
 * (docs/secrets.md#bounds): the time grows with the input's size, not with its square.
 */
import { randomBytes } from 'node:crypto';
import { parseProfileKeys } from '../src/domain/profile-crypto.js';
import { createSecretVault } from '../src/domain/secrets.js';
import { revealDefaultInput, sealDefaultInput } from '../src/local-service/default-input.js';

const SIZES = [10_000, 40_000];
const schema = { type: 'object', additionalProperties: { type: 'string', writeOnly: true } };

export function benchSecrets(): Record<string, number | string> {
  const keys = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
  const figures: Record<string, number | string> = {};
  for (const size of SIZES) {
    const payload = Object.fromEntries(Array.from({ length: size }, (_, i) => [`field${i}`, `secret-value-${i}`]));
    const paths = Object.keys(payload).map((key) => [key]);
    figures[`${size} secret fields: input size (KB)`] = Math.round(JSON.stringify(payload).length / 1024);

    let started = performance.now();
    const stored = sealDefaultInput(payload, paths, keys);
    figures[`${size} secret fields: sealDefaultInput (ms)`] = Math.round(performance.now() - started);

    started = performance.now();
    const opened = revealDefaultInput({ configuration: { inputPayload: stored.masked }, input_secrets: stored.sealed }, keys) as Record<string, string>;
    figures[`${size} secret fields: revealDefaultInput (ms)`] = Math.round(performance.now() - started);
    if (opened.field0 !== 'secret-value-0') throw new Error('the default input did not open to its values');

    started = performance.now();
    const vault = createSecretVault(payload, schema);
    figures[`${size} secret fields: createSecretVault (ms)`] = Math.round(performance.now() - started);
    if (vault.paths.length !== size) throw new Error(`the vault holds ${vault.paths.length} secrets, not ${size}`);
  }
  return figures;
}
