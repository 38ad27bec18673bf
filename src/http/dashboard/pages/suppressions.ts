import type { FastifyReply } from 'fastify';
import { AppError } from '../../../domain/errors.js';
import type { Suppression, SuppressionService } from '../../../services/suppressions.js';
import type { App } from '../../route-kit.js';
import { formatDate, type Html, html, layout } from '../html.js';
import { type DashboardServices, type Form, type PageGuard, page } from '../page-kit.js';

/** Numbers on one page of the list. */
export const SUPPRESSIONS_PAGE_SIZE = 50;
/** The API's limit on a reason (`POST /api/v1/suppressions`), kept on the form too. */
const REASON_MAX = 500;

type Services = Pick<DashboardServices, 'suppressions'>;
type FieldErrors = Partial<Record<'phoneNumber' | 'reason' | 'search' | 'numbers', string>>;

/** What one import did: counts, and each refused line with why. */
export interface ImportReport {
  added: number;
  alreadyThere: number;
  refused: Array<{ line: number; text: string; reason: string }>;
}

/** What the list page shows besides the list: a search, a form's errors and values, a result. */
interface ListState {
  search: string;
  errors: FieldErrors;
  values: Form;
  notice: Html | null;
  report: ImportReport | null;
}

const EMPTY_STATE: ListState = { search: '', errors: {}, values: {}, notice: null, report: null };

/**
 * `/dashboard/suppressions`: the user's do-not-call list with where each entry came from; add one,
 * import many (the same `SuppressionService.add` as the API and the CLI, one number at a time),
 * search by number and remove.
 */
export function registerSuppressionsPage(
  app: App,
  services: Services,
  { sessions, signedIn, checkForm, notFound }: PageGuard,
): void {
  app.get('/dashboard/suppressions', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const query = request.query as Record<string, unknown>;
    const search = typeof query.number === 'string' ? query.number.trim() : '';
    const cursor = typeof query.cursor === 'string' ? query.cursor : undefined;
    const state: ListState = { ...EMPTY_STATE, search, notice: noticeOf(query) };
    if (search) return showSearch(reply, services.suppressions, session.userId, csrf, state);
    let listed: Awaited<ReturnType<SuppressionService['list']>>;
    try {
      listed = await services.suppressions.list(session.userId, {
        limit: SUPPRESSIONS_PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
      });
    } catch (error) {
      // A cursor edited by hand: start from the newest.
      if (error instanceof AppError && error.code === 'INVALID_REQUEST')
        return reply.redirect('/dashboard/suppressions', 303);
      throw error;
    }
    return page(
      reply,
      200,
      suppressionsPage(csrf, listed.items, listed.nextCursor, cursor !== undefined, state),
    );
  });

  app.post('/dashboard/suppressions', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const form = checkForm(request, reply);
    if (!form) return reply;
    const phoneNumber = (form.phoneNumber ?? '').trim();
    const reason = (form.reason ?? '').trim();
    const refuse = async (errors: FieldErrors) => {
      const csrf = sessions.csrfToken(request, reply);
      const listed = await services.suppressions.list(session.userId, { limit: SUPPRESSIONS_PAGE_SIZE });
      const state = { ...EMPTY_STATE, errors, values: { phoneNumber, reason } };
      return page(reply, 400, suppressionsPage(csrf, listed.items, listed.nextCursor, false, state));
    };
    if (reason.length > REASON_MAX) return refuse({ reason: `must be at most ${REASON_MAX} characters` });
    let added: Awaited<ReturnType<SuppressionService['add']>>;
    try {
      added = await services.suppressions.add(session.userId, { phoneNumber, ...(reason ? { reason } : {}) });
    } catch (error) {
      const message = fieldMessage(error, 'phoneNumber');
      if (message === null) throw error;
      return refuse({ phoneNumber: message });
    }
    const outcome = added.created ? 'added' : 'kept';
    const number = encodeURIComponent(added.suppression.phoneNumber);
    return reply.redirect(`/dashboard/suppressions?${outcome}=${number}`, 303);
  });

  app.post('/dashboard/suppressions/import', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const form = checkForm(request, reply);
    if (!form) return reply;
    const csrf = sessions.csrfToken(request, reply);
    const lines = importLines(form.numbers ?? '');
    const list = () => services.suppressions.list(session.userId, { limit: SUPPRESSIONS_PAGE_SIZE });
    if (lines.length === 0) {
      const listed = await list();
      const state = { ...EMPTY_STATE, errors: { numbers: 'give at least one number, one a line' } };
      return page(reply, 400, suppressionsPage(csrf, listed.items, listed.nextCursor, false, state));
    }
    const report = await importNumbers(services.suppressions, session.userId, lines);
    const listed = await list();
    const state = { ...EMPTY_STATE, report };
    return page(reply, 200, suppressionsPage(csrf, listed.items, listed.nextCursor, false, state));
  });

  app.post('/dashboard/suppressions/remove', async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const form = checkForm(request, reply);
    if (!form) return reply;
    const phoneNumber = form.phoneNumber ?? '';
    try {
      await services.suppressions.remove(session.userId, phoneNumber);
    } catch (error) {
      // Not on this user's list (someone else's, or not a number at all): nothing of theirs here.
      if (!(error instanceof AppError) || !['NOT_FOUND', 'INVALID_PARAMETER'].includes(error.code))
        throw error;
      return notFound(reply, sessions.csrfToken(request, reply));
    }
    return reply.redirect(`/dashboard/suppressions?removed=${encodeURIComponent(phoneNumber)}`, 303);
  });
}

/** The service's own message for `field` when it refused the input there, else null. */
function fieldMessage(error: unknown, field: string): string | null {
  if (!(error instanceof AppError) || error.code !== 'INVALID_REQUEST') return null;
  const errors = (error.details as { fieldErrors?: Record<string, string[]> } | undefined)?.fieldErrors;
  return errors?.[field]?.[0] ?? error.message;
}

/** The import box's numbers: one a line, the first comma-, semicolon- or tab-separated field of each. */
export function importLines(text: string): Array<{ line: number; text: string }> {
  return text
    .split(/\r?\n/)
    .map((raw, index) => ({
      line: index + 1,
      text: (raw.split(/[,;\t]/)[0] ?? '').trim().replace(/^"|"$/g, ''),
    }))
    .filter((entry) => entry.text !== '');
}

/** Adds each number through the service, one after the other; a refused one does not stop the rest. */
export async function importNumbers(
  suppressions: SuppressionService,
  userId: string,
  lines: Array<{ line: number; text: string }>,
): Promise<ImportReport> {
  const report: ImportReport = { added: 0, alreadyThere: 0, refused: [] };
  for (const entry of lines) {
    try {
      const { created } = await suppressions.add(userId, { phoneNumber: entry.text });
      if (created) report.added += 1;
      else report.alreadyThere += 1;
    } catch (error) {
      const reason = fieldMessage(error, 'phoneNumber');
      if (reason === null) throw error;
      report.refused.push({ ...entry, reason });
    }
  }
  return report;
}

/** A search by number: the one record, none, or the service's message next to the search box. */
async function showSearch(
  reply: FastifyReply,
  suppressions: SuppressionService,
  userId: string,
  csrf: string,
  state: ListState,
): Promise<FastifyReply> {
  try {
    const found = await suppressions.find(userId, state.search);
    return page(reply, 200, suppressionsPage(csrf, found ? [found] : [], null, true, state));
  } catch (error) {
    const message = fieldMessage(error, 'phoneNumber');
    if (message === null) throw error;
    return page(
      reply,
      400,
      suppressionsPage(csrf, [], null, true, { ...state, errors: { search: message } }),
    );
  }
}

/** The notice after a redirect: what was added, kept or removed. */
function noticeOf(query: Record<string, unknown>): Html | null {
  const said = (key: string) => (typeof query[key] === 'string' ? (query[key] as string) : null);
  const added = said('added');
  if (added) return html`<strong>${added}</strong> is on your list now: it will not be dialed.`;
  const kept = said('kept');
  if (kept) return html`<strong>${kept}</strong> was already on your list; its record is unchanged.`;
  const removed = said('removed');
  if (removed) return html`<strong>${removed}</strong> was removed from your list: it may be dialed again.`;
  return null;
}

function sourceOf(item: Suppression): Html {
  if (item.sourceCallId) {
    return html`Opt-out heard on <a href="/dashboard/calls/${item.sourceCallId}">call <span class="mono">${item.sourceCallId}</span></a>`;
  }
  return html`Added by hand (API, CLI or dashboard)`;
}

/** A field's error, next to it, named by the input's aria-describedby. */
function fieldError(id: string, message: string | undefined): Html | string {
  return message ? html`<span class="error field-error" id="${id}-error">${message}</span>` : '';
}

function invalid(id: string, message: string | undefined): Html | string {
  return message ? html`aria-invalid="true" aria-describedby="${id}-error"` : '';
}

function searchForm(state: ListState): Html {
  return html`<form method="get" action="/dashboard/suppressions" class="inline-form" role="search">
    <label for="search">Find a number <input id="search" name="number" value="${state.search}" inputmode="tel" autocomplete="off" placeholder="+14155550100" ${invalid('search', state.errors.search)}></label>
    ${fieldError('search', state.errors.search)}
    <button type="submit">Search</button>${state.search ? html` <a href="/dashboard/suppressions">Show all</a>` : ''}
  </form>`;
}

function addForm(csrf: string, state: ListState): Html {
  const { errors, values } = state;
  return html`<section aria-labelledby="add-title"><h2 id="add-title">Add a number</h2>
    <form method="post" action="/dashboard/suppressions" class="inline-form" novalidate>
      <input type="hidden" name="_csrf" value="${csrf}">
      <label for="phoneNumber">Number (E.164) <input id="phoneNumber" name="phoneNumber" required maxlength="32" inputmode="tel" autocomplete="off" placeholder="+14155550100" value="${values.phoneNumber ?? ''}" ${invalid('phoneNumber', errors.phoneNumber)}>
        ${fieldError('phoneNumber', errors.phoneNumber)}</label>
      <label for="reason">Reason (optional) <input id="reason" name="reason" maxlength="${REASON_MAX}" value="${values.reason ?? ''}" ${invalid('reason', errors.reason)}>
        ${fieldError('reason', errors.reason)}</label>
      <button type="submit">Add</button>
    </form></section>`;
}

function importForm(csrf: string, state: ListState): Html {
  return html`<section aria-labelledby="import-title"><h2 id="import-title">Import a list</h2>
    <form method="post" action="/dashboard/suppressions/import" class="stacked-form">
      <input type="hidden" name="_csrf" value="${csrf}">
      <label for="numbers">Numbers, one a line (a CSV's first column is read; about 1,000 at a time)</label>
      <textarea id="numbers" name="numbers" rows="5" ${invalid('numbers', state.errors.numbers)}></textarea>
      ${fieldError('numbers', state.errors.numbers)}
      <p><button type="submit">Import</button></p>
    </form>
    ${state.report ? importResult(state.report) : ''}</section>`;
}

function importResult(report: ImportReport): Html {
  return html`<div class="notice" role="status" data-field="import-result">
    <p>Imported: <strong data-field="added">${report.added}</strong> added, <strong data-field="already">${report.alreadyThere}</strong> already there, <strong data-field="refused">${report.refused.length}</strong> refused.</p>
    ${
      report.refused.length > 0
        ? html`<ul class="refused">${report.refused.map(
            (entry) => html`<li>Line ${entry.line}, <code>${entry.text}</code>: ${entry.reason}</li>`,
          )}</ul>`
        : ''
    }</div>`;
}

function listTable(csrf: string, items: Suppression[], searching: boolean): Html {
  if (items.length === 0) {
    return html`<p class="empty">${searching ? 'That number is not on your list.' : 'Your list is empty.'}</p>`;
  }
  return html`<div class="table-wrap"><table class="suppressions">
    <thead><tr><th scope="col">Number</th><th scope="col">Reason</th><th scope="col">Source</th><th scope="col">Added</th><th scope="col">Action</th></tr></thead>
    <tbody>${items.map(
      (item) => html`<tr data-number="${item.phoneNumber}">
        <td class="nowrap">${item.phoneNumber}</td>
        <td>${item.reason ?? '—'}</td>
        <td>${sourceOf(item)}</td>
        <td>${formatDate(item.createdAt)}</td>
        <td><form method="post" action="/dashboard/suppressions/remove" data-confirm="Remove ${item.phoneNumber}? It may be dialed again.">
          <input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="phoneNumber" value="${item.phoneNumber}">
          <button type="submit" class="danger" aria-label="Remove ${item.phoneNumber}">Remove</button></form></td>
      </tr>`,
    )}</tbody></table></div>`;
}

export function suppressionsPage(
  csrf: string,
  items: Suppression[],
  nextCursor: string | null,
  paged: boolean,
  state: ListState,
): string {
  const searching = state.search !== '';
  const body = html`<h1>Suppressions</h1>
    <p class="muted">Numbers that are never dialed: refused for single calls, skipped in campaigns. Opt-outs heard on calls are added by themselves.</p>
    ${state.notice ? html`<p class="notice" role="status">${state.notice}</p>` : ''}
    ${addForm(csrf, state)}
    ${importForm(csrf, state)}
    <section aria-labelledby="list-title"><h2 id="list-title">Your list</h2>
      ${searchForm(state)}
      ${listTable(csrf, items, searching)}
      <p class="pager">${paged && !searching ? html`<a href="/dashboard/suppressions">Newest</a> ` : ''}${
        nextCursor
          ? html`<a href="/dashboard/suppressions?cursor=${encodeURIComponent(nextCursor)}" rel="next">Older</a>`
          : ''
      }</p></section>`;
  return layout({ title: 'Suppressions', csrf, active: 'suppressions' }, body);
}
