import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifySchema } from 'fastify';

/** The 1.2.0 path moves: a legacy path still answers, marked deprecated (RFC 9745) with its successor. */
const LEGACY_DEPRECATED_AT = Math.floor(Date.parse('2025-01-01T00:00:00Z') / 1000);

export function markDeprecated(reply: FastifyReply, successor: string): void {
  reply.header('deprecation', `@${LEGACY_DEPRECATED_AT}`);
  reply.header('link', `<${successor}>; rel="successor-version"`);
}

/** The headers markDeprecated sends, as the OpenAPI document declares them. */
const DeprecationHeaders = {
  Deprecation: Type.String({
    description: 'RFC 9745: when this path was deprecated, as `@<unix seconds>` (`@1735689600`, 2025-01-01)',
  }),
  Link: Type.String({
    description: 'The successor path: `</api/v1/...>; rel="successor-version"` (RFC 8288)',
  }),
};

/**
 * A legacy path's schema, from its successor's: the same request and replies, marked deprecated,
 * with the Deprecation and Link headers declared on its success replies.
 */
export function legacySchema<S extends FastifySchema & { response: Record<number, TSchema> }>(
  schema: S,
  legacy: { operationId: string; summary: string; successor: string },
): S {
  const response: Record<number, TSchema> = {};
  for (const [status, reply] of Object.entries(schema.response)) {
    const success = status.startsWith('2') && !reply.$ref;
    response[Number(status)] = success
      ? { ...reply, headers: { ...(reply.headers ?? {}), ...DeprecationHeaders } }
      : reply;
  }
  return {
    ...schema,
    operationId: legacy.operationId,
    summary: legacy.summary,
    description: `Deprecated: use ${legacy.successor}, which answers the same. Replies carry the Deprecation header and a Link to the successor.`,
    deprecated: true,
    response,
  } as S;
}

/** Tells a client where the next page is: the cursor in X-Next-Cursor, the whole address in Link. */
export function linkNextPage(reply: FastifyReply, path: string, query: object, cursor: string | null): void {
  if (!cursor) return;
  const next = new URLSearchParams({ ...(query as Record<string, string>), cursor });
  reply.header('x-next-cursor', cursor);
  reply.header('link', `<${path}?${next.toString()}>; rel="next"`);
}
