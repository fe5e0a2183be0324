import { Extensions } from 'type-graphql';
import type { GraphQLField, GraphQLInputField } from 'graphql';
import type { Maybe } from 'graphql/jsutils/Maybe';

/**
 * What a field takes or answers beyond its GraphQL type: formats, allowed
 * values, bounds, and its REST spelling. The REST adapter derives each
 * route's bodies and their JSON schemas from the GraphQL types; these hints
 * ride on the same field, so a shape is still written once. Their bounds
 * hold on every transport: REST validates them in its JSON schemas, the
 * policy layer checks GraphQL arguments against them
 * (./policy/bounds.ts). They stay out of the GraphQL schema (extensions are
 * not printed).
 */
export interface RestHints {
  /** The REST name when it is not the snake_case of the GraphQL name. */
  name?: string;
  /** An optional (nullable) input member REST requires all the same: null says something, absence would not (it takes null, as every optional member does). */
  required?: true;
  /** An optional input member that takes no null: left out, it keeps its value; null is refused (NULL_ISSUE), and REST declares no null. */
  notNull?: true;
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
const REST_ARGS = 'atriumRestArgs';

/** A field or field config: what carries extensions. */
type HintedField = { extensions?: Maybe<Readonly<Record<string, unknown>>> };

/** Declares a field's REST hints. */
export function Rest(hints: RestHints): PropertyDecorator & MethodDecorator {
  return Extensions({ [REST]: Object.freeze({ ...hints }) });
}

export function restHints(field: GraphQLField<unknown, unknown> | GraphQLInputField): RestHints | undefined {
  return field.extensions?.[REST] as RestHints | undefined;
}

/**
 * Declares the hints of a root field's scalar arguments, by argument name
 * (type-graphql keeps no extensions on an argument, so they ride on its
 * field). A route's own hints for the argument add only REST's docs.
 */
export function RestArgs(hints: Record<string, RestHints>): MethodDecorator {
  return Extensions({ [REST_ARGS]: Object.freeze({ ...hints }) });
}

/**
 * The hint of an argument that names a row by id (Atrium's ids are UUIDs):
 * any other value is validation_error before the resolver runs, and the
 * policy layer lowers an upper-cased one to the case ids are stored in.
 */
export const UUID = { format: 'uuid' } as const satisfies RestHints;

export function restArgHints(field: HintedField, arg: string): RestHints | undefined {
  return restArgNames(field).includes(arg) ? (field.extensions![REST_ARGS] as Record<string, RestHints>)[arg] : undefined;
}

/** The arguments a field declares hints for (the policy layer checks that each exists). */
export function restArgNames(field: HintedField): string[] {
  return Object.keys((field.extensions?.[REST_ARGS] as Record<string, RestHints> | undefined) ?? {});
}

/** camelCase to the REST spelling: createdAt → created_at. */
export function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A field's REST name: its hint's `name`, or the snake_case of its GraphQL name. */
export function restName(field: GraphQLField<unknown, unknown> | GraphQLInputField): string {
  return restHints(field)?.name ?? snake(field.name);
}
