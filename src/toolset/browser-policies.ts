/**
 * What the browser toolset lets the model do, as the SDK's toolset class takes it: which optional
 * members are on, which files an upload may name, which URLs a navigate may open, and who
 * confirms a member (nobody: the workflow decided before the run).
 */
import { ToolError, type BetaAbstractBrowserToolset20260801 } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type { BetaBrowserToolsetConfigs } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { BrowserSession } from '../browser/types.js';

type ToolsetOptions = ConstructorParameters<typeof BetaAbstractBrowserToolset20260801>[0];

export interface PolicyOptions {
  session: Pick<BrowserSession, 'checkUrl'>;
  allowJavascript?: boolean;
  inputFiles?: ReadonlyArray<{ name: string }>;
}

export function browserToolsetPolicies(options: PolicyOptions): Omit<ToolsetOptions, 'browserState'> {
  const files = options.inputFiles ?? [];
  const configs: BetaBrowserToolsetConfigs = {
    read_console: { enabled: true },
    read_network: { enabled: true },
    ...(options.allowJavascript ? { javascript_exec: { enabled: true } } : {}),
    // Only with input files to choose from; the session gives pages nothing else.
    file_upload: { enabled: files.length > 0 },
  };
  return {
    configs,
    filePolicy: {
      // The model names input files; the session turns names into files (and nothing else).
      resolveUploadPaths: (_context, names) => {
        for (const name of names) {
          if (!files.some((f) => f.name === name)) {
            throw new ToolError(`${JSON.stringify(name)} is not an input file of this execution; the files you may upload are: ${files.map((f) => f.name).join(', ')}`);
          }
        }
        return names;
      },
      resolveUploadDocuments: () => {
        throw new ToolError('document_ids are not used here: name one of the execution\'s input files in paths');
      },
      // A download's saved path is the worker's, not a file the model can use.
      isPathVisible: () => false,
    },
    // The allow-list, before the driver sees a navigate (the egress proxy and the request
    // guard still stand behind it for redirects and everything a page loads on its own).
    urlPolicy: (_context, url) => {
      const target = normaliseUrl(url);
      if (!target.ok) throw new ToolError(target.error);
      const verdict = options.session.checkUrl(target.url);
      if (!verdict.ok) throw new ToolError(`Navigation refused: ${target.url} is outside the workflow's allowed domains (${verdict.reason}).`);
    },
    // Nobody confirms in an unattended run: javascript_exec is on only when the workflow asked
    // for it, and then every call of it is allowed.
    confirm: ({ member }) => (member === 'javascript_exec' ? options.allowJavascript === true : member === 'file_upload' ? files.length > 0 : true),
  };
}

/** A URL as the documentation asks: no scheme means https; any scheme but http(s) is refused. */
export function normaliseUrl(raw: unknown): { ok: true; url: string } | { ok: false; error: string } {
  if (typeof raw !== 'string' || raw.trim() === '') return { ok: false, error: 'url must be a non-empty string' };
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:/i.test(text) && !/^[^:/]+:\d+(\/|$)/.test(text) ? text : `https://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { ok: false, error: `"${text}" is not a valid URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, error: 'Navigation refused. Only http and https URLs are allowed.' };
  return { ok: true, url: url.href };
}
