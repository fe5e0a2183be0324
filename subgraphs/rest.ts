import { Extensions } from 'type-graphql';
import type { GraphQLField, GraphQLInputField } from 'graphql';

/**
 * What the REST surface documents and validates about a field beyond its
 * GraphQL type: formats, allowed values, bounds. The REST adapter derives
 * each route's bodies and their JSON schemas from the GraphQL types; these
 * hints ride on the same field, so a shape is still written once. They stay
 * out of the GraphQL schema (extensions are not printed).
 */
export interface RestHints {
  /** The REST name when it is not the snake_case of the GraphQL name. */
  name?: string;
  /**
   * An optional input member may be sent as null, and null means something
   * (clear it, turn it off). Otherwise REST refuses null where GraphQL's
   * nullable input type means only "optional".
   */
  nullable?: true;
  description?: string;
  format?: string;
  enum?: readonly string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  /** For a list: hints of its items. */
  items?: RestHints;
}

const REST = 'atriumRest';

/** Declares a field's REST hints. */
export function Rest(hints: RestHints): PropertyDecorator & MethodDecorator {
  return Extensions({ [REST]: Object.freeze({ ...hints }) });
}

export function restHints(field: GraphQLField<unknown, unknown> | GraphQLInputField): RestHints | undefined {
  return field.extensions?.[REST] as RestHints | undefined;
}

/** camelCase to the REST spelling: createdAt → created_at. */
export function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A field's REST name: its hint's `name`, or the snake_case of its GraphQL name. */
export function restName(field: GraphQLField<unknown, unknown> | GraphQLInputField): string {
  return restHints(field)?.name ?? snake(field.name);
}
