import type { FastifyReply } from 'fastify';

/** The 1.2.0 path moves: a legacy path still answers, marked deprecated (RFC 9745) with its successor. */
const LEGACY_DEPRECATED_AT = Math.floor(Date.parse('2025-01-01T00:00:00Z') / 1000);

export function markDeprecated(reply: FastifyReply, successor: string): void {
  reply.header('deprecation', `@${LEGACY_DEPRECATED_AT}`);
  reply.header('link', `<${successor}>; rel="successor-version"`);
}

/** Tells a client where the next page is: the cursor in X-Next-Cursor, the whole address in Link. */
export function linkNextPage(reply: FastifyReply, path: string, query: object, cursor: string | null): void {
  if (!cursor) return;
  const next = new URLSearchParams({ ...(query as Record<string, string>), cursor });
  reply.header('x-next-cursor', cursor);
  reply.header('link', `<${path}?${next.toString()}>; rel="next"`);
}
