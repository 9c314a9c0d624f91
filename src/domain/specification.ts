import { readSpecification, type Specification } from '../contract/specification.js';
import { ExecutionError } from '../contract/errors.js';

/**
 * Validates a specification as received (from the job or the API) and normalises its field
 * names (docs/specification.md#fields). Throws `invalid_specification` naming every faulty field.
 */
export function parseSpecification(raw: unknown): Specification {
  const read = readSpecification(raw);
  if (!read.ok) throw new ExecutionError('invalid_specification', read.reason);
  return read.specification;
}
