import { MAX_PER_PAGE } from '../src/pagination';
import type { JsonSchema } from './route';

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

/** The `page` and `per_page` query parameters (bounds as checkPage enforces them). */
export function pageQuery(defaultPerPage: number): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      page: { type: 'integer', minimum: 1, default: 1, description: 'Page number, from 1' },
      per_page: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_PER_PAGE,
        default: defaultPerPage,
        description: `Items per page, 1 to ${MAX_PER_PAGE}`,
      },
    },
  };
}

export function pageEnvelope(item: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['items', 'page', 'per_page', 'total'],
    properties: {
      items: { type: 'array', items: item },
      page: { type: 'integer' },
      per_page: { type: 'integer' },
      total: { type: 'integer', description: 'Items on all pages' },
    },
  };
}

/** A service page (camelCase, as GraphQL returns it) as the REST envelope. */
export function toPageBody<T, U>(
  page: { items: T[]; page: number; perPage: number; total: number },
  item: (value: T) => U,
): PageBody<U> {
  return { items: page.items.map(item), page: page.page, per_page: page.perPage, total: page.total };
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
