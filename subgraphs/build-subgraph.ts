import 'reflect-metadata';
import { buildSchema, createResolversMap, getMetadataStorage, type NonEmptyArray } from 'type-graphql';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { Kind, parse, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLSchema, type GraphQLUnionType } from 'graphql';
import type { AnyDomain, ApisOfList } from '../src/kernel/domain';
import { DateTimeISO } from './date-time';
import type { GraphQLContext } from './context';
import { enforceFieldPolicies, guarded } from './policy/enforce';
import { compileRepresentationKeys, type EntityKeys } from './policy/bounds';
import { atArguments } from './errors';
import { restHints, type RestHints } from './rest';
import { AppError } from '../src/errors/catalog';

export const subgraphNames = ['identity', 'admin', 'billing', 'modules'] as const;
export type SubgraphName = (typeof subgraphNames)[number];

/** Federation 2 header every subgraph SDL starts with. */
const FEDERATION_LINK = `extend schema
  @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable"])
`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ReferenceResolver = (reference: any, context: any) => unknown;

/**
 * A resolver class: its static `from` builds the instance from the domain
 * APIs it uses, and its parameter type says which those are. A subgraph
 * lists the domains it serves, so a resolver that uses any other domain does
 * not type-check in it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ResolverClass<Apis = any> = (abstract new (...args: any[]) => object) & { from(apis: Apis): object };

export interface SubgraphDefinition<Domains extends readonly AnyDomain[] = readonly AnyDomain[]> {
  name: SubgraphName;
  /** The domains its resolvers use; `atrium subgraph <name>` boots these (and what they require) only. */
  domains: Domains;
  resolvers: readonly ResolverClass<ApisOfList<Domains>>[];
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  orphanedTypes?: Function[];
  /** `__resolveReference` per entity type this subgraph can resolve by key. */
  references?: Record<string, ReferenceResolver>;
}

/** Infers a subgraph definition's types (its domains, their APIs). */
export function defineSubgraph<const Domains extends readonly AnyDomain[]>(definition: SubgraphDefinition<Domains>): SubgraphDefinition<Domains> {
  return definition;
}

/** The resolver instances of these subgraphs, built from one app's domain APIs. */
export function resolverInstances(definitions: readonly SubgraphDefinition[], apis: Record<string, unknown>): object[] {
  return definitions.flatMap((definition) => definition.resolvers.map((resolver) => resolver.from(apis)));
}

export interface BuiltSubgraph {
  name: SubgraphName;
  /** The executable type-graphql schema, before federation plumbing. */
  schema: GraphQLSchema;
  /** The Federation 2 SDL committed under schema/<name>.graphql. */
  sdl: string;
  references: Record<string, ReferenceResolver>;
}

/**
 * type-graphql requires a PubSub even when every subscription brings its own
 * `subscribe`. Atrium's subscriptions read the kernel's event bus through
 * their resolver (one bus per running app), so topic-based use is refused loudly.
 */
const contextBusOnly = {
  publish(): never {
    throw new Error('Publish through the kernel event bus; subscriptions read it through their resolver');
  },
  subscribe(): never {
    throw new Error('Declare @Subscription({ subscribe }) over the event bus; topics are not used');
  },
};

/**
 * Plain fields read their property as graphql's default resolver does. By
 * default type-graphql wraps every field in a resolver of its own (a closure
 * call, an object and a middleware check per field, on every request, and
 * graphql-jit cannot compile a property read behind it); the wrapper exists
 * for middlewares and @Authorized, which Atrium does not use (its policy is
 * the policy layer's, on root fields). Field resolvers keep their wrappers.
 */
function plainFieldsReadDirectly(): void {
  const metadata = getMetadataStorage();
  if (metadata.middlewares.length || metadata.resolverMiddlewares.length || metadata.authorizedFields.length || metadata.authorizedResolver.length) {
    throw new Error('type-graphql middlewares and @Authorized would be skipped on plain fields; enforce policy in subgraphs/policy instead');
  }
  for (const type of [...metadata.objectTypes, ...metadata.interfaceTypes]) type.simpleResolvers ??= true;
}

export async function buildSubgraph(definition: SubgraphDefinition): Promise<BuiltSubgraph> {
  plainFieldsReadDirectly();
  const schema = await buildSchema({
    // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
    resolvers: definition.resolvers as unknown as NonEmptyArray<Function>,
    // Resolver instances belong to an app (its domains); the request's context holds them.
    container: ({ context }) => (context as GraphQLContext).container,
    orphanedTypes: definition.orphanedTypes,
    // A subgraph may have no Query of its own (it only extends entities).
    skipCheck: true,
    // Input rules live in the core services, once for every transport.
    validate: false,
    pubSub: contextBusOnly,
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
  });
  const sdl = `${FEDERATION_LINK}\n${printSchemaWithDirectives(schema)}\n`;
  // The policy layer goes into the executable schema, so every transport that runs it enforces it.
  return { name: definition.name, schema: enforceFieldPolicies(schema, definition.name), sdl, references: definition.references ?? {} };
}

/**
 * The most entity representations one operation resolves, over all its
 * `_entities` fields: far more than a gateway's fetch for a page of results
 * needs, and a bound on the reads one request can ask for.
 */
export const MAX_REPRESENTATIONS = 2000;

/** The subgraph as a standalone federated service (`_service`, `_entities`). */
export function federatedSchema(subgraph: BuiltSubgraph): GraphQLSchema {
  const resolvers = createResolversMap(subgraph.schema) as Record<string, Record<string, unknown>>;
  for (const [typeName, resolveReference] of Object.entries(subgraph.references)) {
    resolvers[typeName] = { ...(resolvers[typeName] ?? {}), __resolveReference: resolveReference };
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const schema = buildSubgraphSchema({ typeDefs: parse(subgraph.sdl), resolvers: resolvers as any });
  // `_entities` reads what the subgraph's own fields guard, so it needs the credential they need: without one it
  // answers their error (401 unauthenticated, or why the credential was refused), not a quiet list of nulls.
  // Changed in place: the federation keeps each entity type's __resolveReference on the type object, which a
  // rebuilt schema (mapSchema) would lose. `_service` (the SDL, as a gateway reads it) stays public.
  const entities = schema.getQueryType()?.getFields()._entities;
  if (entities?.resolve) {
    const resolveEntities = entities.resolve as GraphQLFieldResolver<unknown, GraphQLContext>;
    const entityTypes = new Set((schema.getType('_Entity') as GraphQLUnionType | undefined)?.getTypes().map((t) => t.name) ?? []);
    const keys = compileRepresentationKeys(entityKeys(subgraph, entityTypes));
    // Representations asked for so far by one execution (each has its own variable values), over all its `_entities` fields.
    const asked = new WeakMap<object, number>();
    entities.resolve = guarded((source, args: { representations?: unknown[] }, ctx, info) => {
      const representations = args.representations ?? [];
      // Each representation is a read (batched, MAX_BATCH keys a statement): a gateway's fetch is bounded like any
      // operation, aliases and fragments of `_entities` together.
      const count = (asked.get(info.variableValues) ?? 0) + representations.length;
      asked.set(info.variableValues, count);
      if (count > MAX_REPRESENTATIONS) {
        throw new AppError('query_too_complex', `The operation exceeds the limit on entity representations: ${count} > ${MAX_REPRESENTATIONS}`, {
          extra: { limit: 'representations', max: MAX_REPRESENTATIONS, actual: count },
        });
      }
      const odd = representations.findIndex((r) => typeof (r as { __typename?: unknown } | null)?.__typename !== 'string' || !entityTypes.has((r as { __typename: string }).__typename));
      if (odd >= 0) {
        throw new AppError('bad_request', `representations[${odd}] names no entity type of this subgraph (${[...entityTypes].join(', ')}) in __typename`);
      }
      // Keys as every other field takes ids: a non-UUID id is a validation_error, an upper-cased one names the same row.
      const refused = keys.refuse(args);
      if (refused) throw atArguments(refused);
      return resolveEntities(source, keys.canonical(args), ctx, info);
    }, {
      // The modules subgraph's fields also take an AI-modules key.
      auth: subgraph.name === 'modules' ? 'modules' : 'authenticated',
    }, entities.args.map(({ name, type }) => ({ name, type })));
  }
  return schema;
}

/**
 * Each entity type's key fields, from its `@key(fields: …)`, with the hints
 * the type-graphql field declares (the federated schema, rebuilt from SDL,
 * keeps no extensions). One flat key a type: a nested selection or a second key stops the build.
 */
function entityKeys(subgraph: BuiltSubgraph, entityTypes: ReadonlySet<string>): EntityKeys {
  const keys = new Map<string, { name: string; hints?: RestHints }[]>();
  const sdl = parse(subgraph.sdl);
  for (const definition of sdl.definitions) {
    if (definition.kind !== Kind.OBJECT_TYPE_DEFINITION || !entityTypes.has(definition.name.value)) continue;
    const type = subgraph.schema.getType(definition.name.value) as GraphQLObjectType;
    for (const directive of definition.directives ?? []) {
      if (directive.name.value !== 'key') continue;
      const fields = directive.arguments?.find((a) => a.name.value === 'fields')?.value;
      const names = fields?.kind === Kind.STRING ? fields.value.trim().split(/\s+/) : [];
      if (keys.has(type.name) || !names.length || names.some((name) => !/^\w+$/.test(name) || !type.getFields()[name])) {
        throw new Error(`${subgraph.name}: ${type.name} has a @key Atrium cannot check (one flat key of its own fields)`);
      }
      keys.set(type.name, names.map((name) => ({ name, hints: restHints(type.getFields()[name]!) })));
    }
  }
  return keys;
}
