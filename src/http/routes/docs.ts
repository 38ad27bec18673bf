import { CSP, type Html, html, layout } from '../dashboard/html.js';
import type { App } from '../route-kit.js';

interface Operation {
  summary?: string;
  description?: string;
  deprecated?: boolean;
  tags?: string[];
  parameters?: Array<{
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: unknown;
  }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function typeOf(schema: unknown): string {
  const s = (schema ?? {}) as { type?: unknown; enum?: unknown[]; anyOf?: unknown[]; $ref?: string };
  if (s.$ref) return s.$ref.replace(/^#\/components\/schemas\//, '');
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(s.anyOf)) return s.anyOf.map(typeOf).join(' | ');
  return Array.isArray(s.type) ? s.type.join(' | ') : String(s.type ?? 'object');
}

function schemaBlock(label: string, schema: unknown): Html {
  if (!schema) return html``;
  return html`<details><summary>${label}: ${typeOf(schema)}</summary><pre>${JSON.stringify(schema, null, 2)}</pre></details>`;
}

function operationHtml(method: string, path: string, op: Operation): Html {
  const id = `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, '-');
  const body = Object.values(op.requestBody?.content ?? {})[0]?.schema;
  return html`<section class="op" id="${id}">
    <h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${path}</code>${op.deprecated ? html` <span class="status status-failed">deprecated</span>` : ''}</h3>
    <p><strong>${op.summary ?? ''}</strong>${op.description ? html` ${op.description}` : ''}</p>
    ${
      op.parameters && op.parameters.length > 0
        ? html`<div class="table-wrap"><table><thead><tr><th>Parameter</th><th>In</th><th>Type</th><th>Required</th><th>Description</th></tr></thead>
          <tbody>${op.parameters.map((p) => html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${typeOf(p.schema)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${p.description ?? ''}</td></tr>`)}</tbody></table></div>`
        : ''
    }
    ${schemaBlock('Request body', body)}
    <ul class="responses">${Object.entries(op.responses ?? {}).map(
      ([status, response]) =>
        html`<li><strong>${status}</strong> ${response.description ?? ''}${schemaBlock('Body', Object.values(response.content ?? {})[0]?.schema)}</li>`,
    )}</ul>
  </section>`;
}

/**
 * `/docs`: the API reference, rendered on the server from the OpenAPI document itself (so it can
 * never disagree with it) and served by outdial: it works offline, with no outside script.
 */
export function registerDocs(app: App): void {
  let page: string | null = null;
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) => {
    page ??= render(app.swagger() as unknown as Record<string, unknown>);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .send(page);
  });
}

function render(doc: Record<string, unknown>): string {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
  const byTag = new Map<string, Array<{ method: string; path: string; op: Operation }>>();
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), { method, path, op }]);
    }
  }
  const webhooks = (doc.webhooks ?? {}) as Record<string, { post?: Operation }>;
  const info = doc.info as { title?: string; version?: string; description?: string };
  const body = html`
    <h1>${info.title ?? 'API'} <span class="muted">${info.version ?? ''}</span></h1>
    <p>${info.description ?? ''}</p>
    <p>Every <code>/api/v1</code> endpoint needs <code>Authorization: Bearer &lt;API key&gt;</code>; <code>/admin/v1</code> needs the admin token.
      The machine-readable document is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p>
    <nav aria-label="Sections" class="toc"><ul>${[...byTag.keys()].map((tag) => html`<li><a href="#tag-${tag}">${tag}</a></li>`)}<li><a href="#webhooks">webhooks</a></li></ul></nav>
    ${[...byTag.entries()].map(
      ([tag, ops]) =>
        html`<h2 id="tag-${tag}">${tag}</h2>${ops.map(({ method, path, op }) => operationHtml(method, path, op))}`,
    )}
    <h2 id="webhooks">webhooks</h2>
    <p>Sent by outdial to your URLs; see <code>docs/webhooks.md</code> for verifying them.</p>
    ${Object.entries(webhooks).map(([name, item]) => (item.post ? operationHtml('post', name, item.post) : ''))}`;
  return layout({ title: 'API reference' }, body);
}
