import type http from 'node:http';
import type { Credential } from './auth.js';

/**
 * A small method + path router: patterns such as `/api/workflows/:id/versions`, each segment
 * matched exactly or captured (percent-decoded). No framework: the API has a dozen routes.
 */

export interface RouteContext {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  /** How the request proved it may come in (an API key, or a dashboard session). */
  credential: Credential;
}

export type RouteHandler = (ctx: RouteContext) => Promise<void>;

interface Route {
  method: string;
  segments: string[];
  handler: RouteHandler;
}

export type RouteMatch = { kind: 'found'; handler: RouteHandler; params: Record<string, string> } | { kind: 'method_not_allowed'; allowed: string[] } | { kind: 'none' };

export function createRouter() {
  const routes: Route[] = [];

  return {
    add(method: string, pattern: string, handler: RouteHandler): void {
      routes.push({ method, segments: split(pattern), handler });
    },

    match(method: string, pathname: string): RouteMatch {
      const parts = split(pathname);
      const allowed: string[] = [];
      for (const route of routes) {
        const params = matchSegments(route.segments, parts);
        if (params === undefined) continue;
        if (route.method === method) return { kind: 'found', handler: route.handler, params };
        allowed.push(route.method);
      }
      return allowed.length > 0 ? { kind: 'method_not_allowed', allowed } : { kind: 'none' };
    },
  };
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i += 1) {
    const expected = pattern[i] as string;
    const actual = parts[i] as string;
    if (expected.startsWith(':')) {
      try {
        params[expected.slice(1)] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return params;
}
