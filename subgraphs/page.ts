import { Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { Rest } from './rest';

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
