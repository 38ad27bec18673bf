import { type RawBuilder, sql } from 'kysely';

/**
 * A page's keyset condition for a list ordered newest first (`created_at desc, id desc`): the rows
 * strictly after `before` in that order. The row comparison is the same as "older, or as old with
 * a smaller id".
 */
export function olderThan(before: { id: string; created_at: Date }): RawBuilder<boolean> {
  return sql<boolean>`(created_at, id) < (${before.created_at}, ${before.id})`;
}
