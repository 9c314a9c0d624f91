import { ExecutionError } from '../contract/errors.js';
import { pathId, type KeyPath } from '../contract/key-path.js';
import { safeRegExp, type RegExpLike } from './safe-regexp.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * Which input values a payload schema marks secret (docs/secrets.md#which-values-are-secret):
 * the schema and the payload are walked together, and every value a subschema with
 * `"writeOnly": true`, `"x-secret": true` or `"format": "totp"` applies to is a secret.
 *
 * Both drafts' keywords are read whatever `$schema` says, because their shapes never collide:
 * `items` as an array (draft 07's tuple) or a schema, `additionalItems` and `prefixItems`,
 * `dependencies` (a schema per key) and `dependentSchemas`, `definitions` and `$defs`. The walk
 * follows `$ref` (JSON pointers, `$id`s and `$anchor`s of the document) and `$dynamicRef` /
 * `$recursiveRef`, `properties`, `patternProperties`, `additionalProperties`,
 * `unevaluatedProperties`, `items`, `contains`, `unevaluatedItems`, `allOf`/`anyOf`/`oneOf`, `not` and
 * `if`/`then`/`else`.
 *
 * A mark under a branch counts whether or not the branch matches this input (`anyOf`, `if`,
 * `then`, `else`, `not`): a secret is never missed because a condition was read one way, and a
 * value is masked at worst once too often. That is why this is a walk of our own rather than
 * the validator's: Ajv applies a branch's marks only where the branch's conditions hold (and
 * reads each draft's keywords only under its own `$schema`), and running it applies every
 * assertion keyword to the payload, which is the caller's to bound (docs/secrets.md).
 *
 * The walk visits each (subschema, value) pair once, so a recursive `$ref` ends; its cost is at
 * most the number of subschemas times the number of values. Payload values are read as own
 * properties only: a key named `__proto__` or `constructor` is a key like any other.
 */
export interface SecretMark {
  /** Where the value is in the payload. */
  path: KeyPath;
  /** `format: "totp"`: the value is a one-time-code seed. */
  totp: boolean;
}

export function findSecretMarks(payload: unknown, schema: JsonSchema): SecretMark[] {
  const marks = new Map<string, SecretMark>();
  forEachApplied(payload, schema, (node, value, path) => {
    if (value !== null && (node.writeOnly === true || node['x-secret'] === true || node.format === 'totp')) {
      const id = pathId(path);
      const known = marks.get(id);
      marks.set(id, { path, totp: node.format === 'totp' || (known?.totp ?? false) });
    }
  });
  return [...marks.values()];
}

/**
 * Calls `visit` once for each subschema of `schema` and each value of `payload` it may apply to
 * (the walk above: every branch counted, whether or not it matches), with the value's path.
 */
export function forEachApplied(payload: unknown, schema: JsonSchema, visit: (node: Record<string, unknown>, value: unknown, path: KeyPath) => void): void {
  const index = indexSchema(schema);
  const visited = new Map<object, Set<string>>();

  const walk = (node: unknown, value: unknown, path: KeyPath, base: string): void => {
    if (!isObject(node) || value === undefined) return;
    const id = pathId(path);
    const seen = visited.get(node) ?? new Set<string>();
    if (seen.has(id)) return;
    seen.add(id);
    visited.set(node, seen);
    const here = index.baseOf.get(node) ?? base;
    visit(node, value, path);
    const targets = [
      ...(typeof node.$ref === 'string' ? index.resolve(node.$ref, here) : []),
      ...(typeof node.$dynamicRef === 'string' ? index.resolveDynamic(node.$dynamicRef, here) : []),
      ...(typeof node.$recursiveRef === 'string' ? index.resolveRecursive(node.$recursiveRef, here) : []),
    ];
    for (const target of targets) walk(target, value, path, here);
    for (const keyword of ['allOf', 'anyOf', 'oneOf'] as const) {
      if (Array.isArray(node[keyword])) for (const branch of node[keyword]) walk(branch, value, path, here);
    }
    for (const keyword of ['not', 'if', 'then', 'else'] as const) walk(node[keyword], value, path, here);

    if (isObject(value) && !Array.isArray(value)) walkObject(node, value, path, here);
    if (Array.isArray(value)) walkArray(node, value, path, here);
  };

  const walkObject = (node: Record<string, unknown>, value: Record<string, unknown>, path: KeyPath, base: string): void => {
    const properties = isObject(node.properties) ? node.properties : undefined;
    const patterns = isObject(node.patternProperties) ? Object.entries(node.patternProperties).map(([source, sub]) => ({ re: index.pattern(source), sub })) : [];
    for (const key of Object.keys(value)) {
      const child = value[key];
      const at = [...path, key];
      let named = false;
      if (properties && Object.hasOwn(properties, key)) {
        named = true;
        walk(properties[key], child, at, base);
      }
      for (const { re, sub } of patterns) {
        if (!re.test(key)) continue;
        named = true;
        walk(sub, child, at, base);
      }
      if (!named) {
        walk(node.additionalProperties, child, at, base);
        walk(node.unevaluatedProperties, child, at, base);
      }
    }
    // A schema per present key: `dependentSchemas` (2020-12) or `dependencies` with a schema (07).
    for (const keyword of ['dependentSchemas', 'dependencies'] as const) {
      const table = node[keyword];
      if (!isObject(table)) continue;
      for (const key of Object.keys(table)) if (Object.hasOwn(value, key) && isObject(table[key]) && !Array.isArray(table[key])) walk(table[key], value, path, base);
    }
  };

  const walkArray = (node: Record<string, unknown>, value: unknown[], path: KeyPath, base: string): void => {
    // The positional schemas: 2020-12's prefixItems, or draft 07's items as an array.
    const tuple = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : [];
    const rest = Array.isArray(node.items) ? node.additionalItems : node.items;
    value.forEach((item, i) => {
      const at = [...path, String(i)];
      if (i < tuple.length) walk(tuple[i], item, at, base);
      else {
        walk(rest, item, at, base);
        walk(node.unevaluatedItems, item, at, base);
      }
      walk(node.contains, item, at, base);
    });
  };

  walk(schema, payload, [], index.rootBase);
}

// ---------------------------------------------------------------------------------------------
// The schema document's resources, for `$ref`.

const DEFAULT_BASE = 'https://payload-schema.invalid/schema.json';

/** Keywords whose value is one subschema, a list of them, or a table of them (both drafts). */
export const ONE = ['additionalItems', 'items', 'contains', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'not', 'if', 'then', 'else', 'contentSchema'];
export const LIST = ['items', 'prefixItems', 'allOf', 'anyOf', 'oneOf'];
export const TABLE = ['$defs', 'definitions', 'properties', 'patternProperties', 'dependentSchemas', 'dependencies'];

interface SchemaIndex {
  rootBase: string;
  /** The base URI in force at each subschema (its own `$id`'s, else its resource's). */
  baseOf: Map<object, string>;
  /** The subschema a `$ref` made at `base` names; throws when it names none. */
  resolve(ref: string, base: string): object[];
  /**
   * A `$dynamicRef` lands on the outermost schema in scope with that `$dynamicAnchor` when it is
   * applied: every schema of the document with that anchor is taken, and the static target.
   */
  resolveDynamic(ref: string, base: string): object[];
  /** A `$recursiveRef` (2019-09): the static target and every `$recursiveAnchor: true` schema. */
  resolveRecursive(ref: string, base: string): object[];
  /** A property-name pattern, compiled once, on the linear-time engine. */
  pattern(source: string): RegExpLike;
}

function indexSchema(schema: JsonSchema): SchemaIndex {
  const baseOf = new Map<object, string>();
  /** Resources by URI without fragment; anchors by name (any resource's: see `locate`); dynamic anchors by name. */
  const resources = new Map<string, unknown>();
  const anchors = new Map<string, object[]>();
  const addAnchor = (name: string, node: object) => anchors.set(name, [...(anchors.get(name) ?? []), node]);
  const dynamicAnchors = new Map<string, object[]>();
  const recursiveAnchors: object[] = [];
  const seen = new Set<object>();

  const visit = (node: unknown, base: string): void => {
    if (!isObject(node) || seen.has(node)) return;
    seen.add(node);
    let here = base;
    if (typeof node.$id === 'string') {
      const resolved = resolveUri(node.$id, base);
      if (resolved) {
        // Draft 07 also names a plain anchor with `$id: "#name"`.
        if (node.$id.startsWith('#')) addAnchor(node.$id.slice(1), node);
        else {
          here = withoutFragment(resolved);
          resources.set(here, node);
        }
      }
    }
    baseOf.set(node, here);
    if (typeof node.$anchor === 'string') addAnchor(node.$anchor, node);
    if (typeof node.$dynamicAnchor === 'string') {
      addAnchor(node.$dynamicAnchor, node);
      dynamicAnchors.set(node.$dynamicAnchor, [...(dynamicAnchors.get(node.$dynamicAnchor) ?? []), node]);
    }
    if (node.$recursiveAnchor === true) recursiveAnchors.push(node);
    for (const keyword of ONE) visit(node[keyword], here);
    for (const keyword of LIST) if (Array.isArray(node[keyword])) for (const sub of node[keyword]) visit(sub, here);
    for (const keyword of TABLE) if (isObject(node[keyword])) for (const sub of Object.values(node[keyword])) visit(sub, here);
  };

  const rootBase = isObject(schema) && typeof schema.$id === 'string' ? withoutFragment(resolveUri(schema.$id, DEFAULT_BASE) ?? DEFAULT_BASE) : DEFAULT_BASE;
  resources.set(rootBase, schema);
  if (isObject(schema)) baseOf.set(schema, rootBase);
  visit(schema, rootBase);

  const patterns = new Map<string, RegExpLike>();
  return {
    rootBase,
    baseOf,
    pattern(source) {
      let re = patterns.get(source);
      if (!re) patterns.set(source, (re = safeRegExp(source)));
      return re;
    },
    resolve(ref, base) {
      const uri = resolveUri(ref, base);
      const found = uri === undefined ? [] : locate(uri);
      if (found.length === 0) throw new ExecutionError('invalid_specification', `payloadSchema: the reference ${JSON.stringify(ref)} names no schema of the document`);
      return found;
    },
    resolveDynamic(ref, base) {
      const uri = resolveUri(ref, base);
      const found = uri === undefined ? [] : locate(uri);
      const named = dynamicAnchors.get(ref.slice(ref.indexOf('#') + 1)) ?? [];
      if (found.length === 0 && named.length === 0) throw new ExecutionError('invalid_specification', `payloadSchema: the reference ${JSON.stringify(ref)} names no schema of the document`);
      return [...found, ...named];
    },
    resolveRecursive(ref, base) {
      return [...this.resolve(ref, base), ...recursiveAnchors];
    },
  };

  /**
   * The schemas a URI names: the one its JSON pointer leads to, or for a plain-name fragment
   * every schema of the document with that anchor. Validators disagree on which of two anchors
   * of the same name in different resources a reference means; taking all of them is never
   * short of a mark.
   */
  function locate(uri: string): object[] {
    const hash = uri.indexOf('#');
    const resource = resources.get(hash < 0 ? uri : uri.slice(0, hash));
    const fragment = hash < 0 ? '' : uri.slice(hash + 1);
    if (fragment === '' || fragment.startsWith('/')) {
      let node: unknown = resource;
      for (const raw of fragment === '' ? [] : fragment.slice(1).split('/')) {
        const key = decodePointerToken(raw);
        if (key === undefined || !isObject(node)) return [];
        if (Array.isArray(node)) node = /^(0|[1-9]\d*)$/.test(key) ? node[Number(key)] : undefined;
        else node = Object.hasOwn(node, key) ? node[key] : undefined;
      }
      return isObject(node) ? [node] : [];
    }
    return anchors.get(decodePointerToken(fragment) ?? fragment) ?? [];
  }
}

function resolveUri(ref: string, base: string): string | undefined {
  try {
    return new URL(ref, base).href;
  } catch {
    return undefined;
  }
}

function withoutFragment(uri: string): string {
  const hash = uri.indexOf('#');
  return hash < 0 ? uri : uri.slice(0, hash);
}

/** A JSON pointer token of a URI fragment: percent-decoded, then `~1` → `/`, `~0` → `~`. */
function decodePointerToken(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object';
}
