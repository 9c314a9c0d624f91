/** The local API's lists (docs/api.md): a page of a resource, asked for with `limit` and `offset`. */
import { z } from 'zod';
import { count } from './json.js';

/** A page of a list: query-string numbers, read as numbers, with their defaults. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

/** The service description's list envelope: the items of the page, and how many there are in all. */
export const listOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), total: count });
