import { MAX_PER_PAGE } from '../src/pagination';
import { query, type ArgSource } from './route';

/**
 * The one page envelope of the REST surface: `{ items, page, per_page, total }`,
 * with an RFC 8288 Link header (first, prev, next, last) added by the adapter
 * for routes marked `paginated`.
 */
export interface PageBody<T = unknown> {
  items: T[];
  page: number;
  per_page: number;
  total: number;
}

/** The `page` and `per_page` query parameters of a list route, as its field's `page` and `perPage` (their bounds are the field's: PAGE_BOUNDS). */
export function pageArgs(): Record<'page' | 'perPage', ArgSource> {
  return {
    page: query('page', { description: 'Page number, from 1' }),
    perPage: query('per_page', { description: `Items per page, 1 to ${MAX_PER_PAGE}` }),
  };
}

/**
 * The Link header of a page: the request's own URL (under the public address)
 * with `page` and `per_page` set, for first, prev, next and last.
 */
export function pageLinks(publicUrl: string, requestUrl: string, body: PageBody): string {
  const last = Math.max(1, Math.ceil(body.total / body.per_page));
  const rels: [string, number][] = [['first', 1]];
  if (body.page > 1) rels.push(['prev', Math.min(body.page - 1, last)]);
  if (body.page < last) rels.push(['next', body.page + 1]);
  rels.push(['last', last]);
  return rels
    .map(([rel, page]) => {
      const url = new URL(publicUrl + requestUrl);
      url.searchParams.set('page', String(page));
      url.searchParams.set('per_page', String(body.per_page));
      return `<${url.href}>; rel="${rel}"`;
    })
    .join(', ');
}
