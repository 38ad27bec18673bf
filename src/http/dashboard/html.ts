/** HTML for the dashboard: escaped by default, one layout, no inline script or style (the CSP forbids them). */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Marks a string as already-safe HTML. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

type Part = Html | string | number | null | undefined | false | Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(part);
}

/** A tagged template: interpolated values are escaped unless they are Html (or arrays of it). */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(out);
}

export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

export interface LayoutOptions {
  title: string;
  /** The signed-in user's CSRF token, for the sign-out form; absent on the sign-in page. */
  csrf?: string;
  active?: 'campaigns' | 'calls' | 'agents' | 'keys' | 'settings' | 'suppressions' | 'webhooks';
  /** Dependencies of the user's calls that are down now: a banner above the page (issue 24 §3). */
  outages?: Array<{ name: string; since: string | null; lastError: string | null }>;
}

/** The banner of the dependencies that are down, naming each and since when. */
function outageBanner(outages: LayoutOptions['outages']): Html | string {
  if (!outages || outages.length === 0) return '';
  return html`<div class="notice outage" role="alert" data-field="outages">
    ${outages.map(
      (outage) =>
        html`<p><strong>${outage.name} is unavailable</strong>${outage.since ? html` since ${formatDate(outage.since)}` : ''}${outage.lastError ? html` <span class="muted">(${outage.lastError})</span>` : ''}.</p>`,
    )}
    <p>No new call that needs it is placed: campaigns that depend on it are paused and resume on their own once it answers again; single calls are refused with 503 until then.</p>
  </div>`;
}

export function layout(options: LayoutOptions, body: Html): string {
  const nav = options.csrf
    ? html`<nav aria-label="Main">
        <a href="/dashboard" ${options.active === 'campaigns' ? new Html('aria-current="page"') : ''}>Campaigns</a>
        <a href="/dashboard/calls" ${options.active === 'calls' ? new Html('aria-current="page"') : ''}>Calls</a>
        <a href="/dashboard/agents" ${options.active === 'agents' ? new Html('aria-current="page"') : ''}>Agents</a>
        <a href="/api-keys" ${options.active === 'keys' ? new Html('aria-current="page"') : ''}>API keys</a>
        <a href="/dashboard/suppressions" ${options.active === 'suppressions' ? new Html('aria-current="page"') : ''}>Suppressions</a>
        <a href="/dashboard/webhooks" ${options.active === 'webhooks' ? new Html('aria-current="page"') : ''}>Webhooks</a>
        <a href="/dashboard/settings" ${options.active === 'settings' ? new Html('aria-current="page"') : ''}>Settings</a>
        <form method="post" action="/sign-out" class="inline">
          <input type="hidden" name="_csrf" value="${options.csrf}">
          <button type="submit" class="link">Sign out</button>
        </form>
      </nav>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)} · outdial</title>
<link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/assets/app.css">
<link rel="stylesheet" href="/dashboard/assets/uPlot.min.css">
<script src="/dashboard/assets/uPlot.iife.min.js" defer></script>
<script src="/dashboard/assets/app.js" defer></script>
</head>
<body>
<header><a class="brand" href="/dashboard">outdial</a>${render(nav)}</header>
<main id="main">
${render(outageBanner(options.outages))}${body.value}
</main>
</body>
</html>`;
}

export function formatDate(iso: string | null): string {
  if (!iso) return '—';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export function formatDuration(seconds: number | null): string {
  if (seconds === null) return '—';
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes} min ${seconds % 60} s` : `${seconds} s`;
}

export function progressBar(percent: number, label: string): Html {
  const value = Math.max(0, Math.min(100, percent));
  return html`<progress max="100" value="${value.toFixed(1)}" aria-label="${label}">${value.toFixed(1)}%</progress>`;
}
