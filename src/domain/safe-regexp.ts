import { RE2JS } from 're2js';

/**
 * The regex engine of every schema the worker and the local service compile (a payload schema's
 * `pattern` and `patternProperties` come from whoever writes the workflow): RE2's linear-time
 * matching, through re2js (pure JavaScript, no install script), so a pattern such as `^(a+)+$`
 * cannot stall the process whatever the input. What RE2 does not have — lookaround and
 * backreferences — makes the schema invalid with a message saying so (docs/specification.md#patterns).
 */
export interface RegExpLike {
  test(text: string): boolean;
  toString(): string;
}

/** JSON Schema patterns are ECMA-262; RE2 spells code points `\x{…}` where ECMA says `\u…`. */
function toRe2Syntax(pattern: string): string {
  return pattern.replace(/(\\+)u(?:\{([0-9a-fA-F]+)\}|([0-9a-fA-F]{4}))/g, (whole, slashes: string, braced?: string, four?: string) =>
    slashes.length % 2 === 1 ? `${slashes}x{${braced ?? four}}` : whole,
  );
}

function compile(pattern: string): RegExpLike {
  let re: RE2JS;
  try {
    re = RE2JS.compile(toRe2Syntax(pattern));
  } catch (error) {
    throw new Error(
      `pattern ${JSON.stringify(pattern)} cannot be run in linear time (${error instanceof Error ? error.message : String(error)}); lookaround and backreferences are not supported`,
    );
  }
  // Ajv keys its compiled patterns by `toString()`: each pattern must name itself.
  return { test: (text) => re.matcher(text).find(), toString: () => `/${pattern}/` };
}

/** Ajv's `code.regExp` engine (the `code` string names it in standalone code, unused here). */
export const safeRegExp = Object.assign((pattern: string) => compile(pattern), { code: 'safeRegExp' });
