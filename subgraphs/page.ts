import { Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { Rest } from './rest';
import { MAX_PER_PAGE } from '../src/pagination';

/**
 * The one pagination envelope of Atrium's lists, as GraphQL sees it:
 * { items, page, perPage, total } (REST: items, page, per_page, total + Link).
 */
export function PageType<T extends object>(item: ClassType<T>, name: string) {
  @ObjectType(name)
  class Page {
    @Field(() => [item])
    items!: T[];

    @Field(() => Int)
    page!: number;

    @Field(() => Int)
    perPage!: number;

    @Rest({ description: 'Items on all pages' })
    @Field(() => Int)
    total!: number;
  }
  return Page;
}

/**
 * The bounds of a list field's `page` and `perPage` arguments, as checkPage
 * holds them: `@RestArgs(PAGE_BOUNDS)`, so both transports and the OpenAPI
 * document state them from one place.
 */
export const PAGE_BOUNDS = { page: { minimum: 1 }, perPage: { minimum: 1, maximum: MAX_PER_PAGE } } as const;
