import type { SwaggerOptions } from '@fastify/swagger';
import type { RouteOptions } from 'fastify';
import { errorResponses } from './schemas/common.js';

/**
 * The OpenAPI document's frame: what @fastify/swagger cannot learn from the routes. Every
 * operation names one of these tags (test/unit/openapi-operations.test.ts holds every route to it),
 * so generated clients and reference pages group the API the same way this list does.
 */
export const OPENAPI_TAGS = [
  { name: 'probes', description: 'Liveness, readiness and backend health, for load balancers and monitors' },
  { name: 'agents', description: 'The AI agents an API key may dial with' },
  { name: 'calls', description: 'Single outbound calls: dial, status, recording, summary and metrics' },
  {
    name: 'batches',
    description:
      'Campaigns of up to 100,000 contacts, dialed in the background: submit, watch, pause, export',
  },
  { name: 'webhooks', description: 'The signed events outdial sends, and the log of their deliveries' },
  { name: 'account', description: "The API key's user: minutes and concurrency" },
  { name: 'suppressions', description: 'Numbers never to be dialed for a user' },
  {
    name: 'admin',
    description: 'Users, API keys, agents and SIP trunks; bearer OUTDIAL_ADMIN_TOKEN, not an API key',
  },
] as const;

export type OpenApiTag = (typeof OPENAPI_TAGS)[number]['name'];

interface WebhookOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
}

/** `call.completed` -> `callCompletedWebhook`: an operationId a client generator can name a handler after. */
export function webhookOperationId(event: string): string {
  const words = event.split(/[^a-zA-Z0-9]+/).filter(Boolean);
  const camel = words.map((word, index) => (index === 0 ? word : word[0]?.toUpperCase() + word.slice(1)));
  return `${camel.join('')}Webhook`;
}

/**
 * The document's `webhooks`, each operation given what the linters ask of any operation (an
 * operationId, a short summary, a description, a tag) where its declaration does not say it
 * already; done here so that an event added later is documented alike without repeating it. A
 * declaration with a summary and no description has its summary (who receives the event, at
 * length) kept as the description.
 */
export function documentWebhooks<T extends Record<string, { post: WebhookOperation }>>(webhooks: T): T {
  const out: Record<string, { post: WebhookOperation }> = {};
  for (const [event, item] of Object.entries(webhooks)) {
    const { summary, description, ...post } = item.post;
    const told = summary ? `${summary.replace(/\.$/, '')}. ` : '';
    out[event] = {
      ...item,
      post: {
        operationId: webhookOperationId(event),
        tags: ['webhooks'],
        ...post,
        summary: description && summary ? summary : `The ${event} event`,
        description:
          description ??
          `${told}Signed like every delivery; docs/webhooks.md tells how to verify and deduplicate it.`,
      },
    };
  }
  return out as T;
}

/** @fastify/swagger's options: the document's info, tags, security schemes and webhooks. */
export function openApiOptions(webhooks: Record<string, { post: WebhookOperation }>): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'outdial Voice Call Service API',
        version: '1.0.0',
        description:
          'AI-driven outbound voice calls and campaigns. See docs/decisions.md for choices the contract leaves open.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        // No public address of the project yet: the name only (docs/decisions.md).
        contact: { name: 'outdial maintainers' },
      },
      servers: [{ url: '/' }],
      tags: OPENAPI_TAGS.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'OUTDIAL_ADMIN_TOKEN' },
        },
      },
      security: [{ bearerAuth: [] }],
      // Plain OpenAPI objects (not TypeBox-typed routes): checked by the OpenAPI validator in the tests.
      webhooks: documentWebhooks(webhooks) as never,
    },
    // A shared schema is a component under its own `$id` (ErrorBody, Suppression...), never the
    // plugin's default `def-0`: generated clients name their types after these.
    refResolver: {
      buildLocalReference(json, _baseUri, _fragment, i) {
        return typeof json.$id === 'string' ? json.$id : `Schema${i}`;
      },
    },
  };
}

/**
 * Every operation declares every status it can answer. Those that come from the framework rather
 * than the route (a malformed URL or header, a body too large or not JSON, a path parameter too
 * long, a route being shut down) are added here to whatever the route declares itself.
 */
export function declareCommonErrors(route: RouteOptions): void {
  const schema = route.schema ?? {};
  const meta = schema as { hide?: boolean; security?: readonly unknown[] };
  if (meta.hide) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const statuses = [400, 408, 431, 500, 503];
  if (!Array.isArray(meta.security) || meta.security.length > 0) statuses.push(401);
  if (methods.some((method) => method !== 'GET' && method !== 'HEAD')) statuses.push(413, 415);
  if (route.url.includes(':')) statuses.push(404, 414);
  const declared = (schema.response ?? {}) as Record<string, unknown>;
  const missing = statuses.filter((status) => !(String(status) in declared));
  route.schema = { ...schema, response: { ...declared, ...errorResponses(...missing) } };
}
