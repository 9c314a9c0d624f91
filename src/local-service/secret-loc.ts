import type { ValidationIssue } from '../contract/api-errors.js';
import type { SecretMark } from '../domain/secret-marks.js';

/**
 * A 422 about an input names where the fault is (`loc`), and a key of the input is part of that
 * path. Under a secret mark the keys are the secret's own (docs/secrets.md#which-values-are-secret:
 * a marked object is one secret, its keys included: `{"sk_live_…": true}`), so every element
 * of `loc` below a mark is shown as `SECRET_LOC` instead of its text, keys and indices alike (an
 * object key of digits reads as an index): the answer says which secret is at fault, never what
 * it holds.
 */
export const SECRET_LOC = '(secret)';

/** `issues` with their `loc` masked below each mark; `prefix` is how many elements of `loc` come before the payload's path. */
export function maskSecretLocs(issues: readonly ValidationIssue[], prefix: number, marks: readonly SecretMark[]): ValidationIssue[] {
  if (marks.length === 0) return [...issues];
  return issues.map((issue) => {
    const path = issue.loc.slice(prefix);
    // The shortest mark the path runs through: everything below it is the secret's.
    let below = Number.POSITIVE_INFINITY;
    for (const { path: mark } of marks) {
      if (mark.length >= below || mark.length > path.length) continue;
      if (mark.every((key, i) => String(key) === String(path[i]))) below = mark.length;
    }
    if (below === Number.POSITIVE_INFINITY || below === path.length) return issue;
    return { ...issue, loc: [...issue.loc.slice(0, prefix + below), ...path.slice(below).map(() => SECRET_LOC)] };
  });
}
