import type { z } from 'zod';

/**
 * An HTTP answer's body read with the contract's schema of it (src/contract/): the test gets the
 * typed value the route declares, and a body of another shape fails the test where it is read.
 */
export function answerAs<S extends z.ZodType>(schema: S, answer: { body: unknown }): z.infer<S> {
  return schema.parse(answer.body);
}
