import 'reflect-metadata';
import { buildSchema, createResolversMap, getMetadataStorage, type NonEmptyArray } from 'type-graphql';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { isInputObjectType, isInterfaceType, isObjectType, Kind, parse, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLSchema, type GraphQLUnionType } from 'graphql';
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

/**
 * Every mutation's result is nullable, whatever its resolver declares. A
 * non-null root field that fails nulls the whole `data` (GraphQL's null
 * propagation), so in an operation of several mutations one refusal hid the
 * others, which had run and committed (a grant answered `data: null`). A
 * nullable result fails alone: `data` keeps what was done, `errors` says
 * what was not. A mutation never answers null without an error; the REST
 * adapter declares its bodies non-null accordingly.
 */
function mutationResultsFailAlone(): void {
  for (const mutation of getMetadataStorage().mutations) {
    const options = mutation.returnTypeOptions;
    if (options.nullable === undefined || options.nullable === false) options.nullable = true;
    else if (options.nullable === 'items') options.nullable = 'itemsAndList';
  }
}

type Metadata = ReturnType<typeof getMetadataStorage>;
type HandlerMetadata = Metadata['queries'][number] | Metadata['fieldResolvers'][number];
type ParamMetadata = NonNullable<HandlerMetadata['params']>[number];
type ParamReader = (root: unknown, args: Record<string, unknown>, context: GraphQLContext, info: unknown) => unknown;

/**
 * Input classes reach resolvers as graphql hands them over (plain objects), not
 * converted to instances, which only gives them their class's prototype. That
 * is the same value as long as an input class has no methods and no property
 * initialisers; one that has either is refused here, at build time.
 */
function inputClassesArePlain(metadata: Metadata, schema: GraphQLSchema): void {
  for (const input of metadata.inputTypes) {
    if (!isInputObjectType(schema.getType(input.name))) continue;
    const Target = input.target as new () => object;
    const methods = Object.getOwnPropertyNames(Target.prototype).filter((name) => name !== 'constructor');
    const initialised = Object.entries(new Target()).filter(([, value]) => value !== undefined).map(([name]) => name);
    if (methods.length || initialised.length) {
      throw new Error(`Input type ${Target.name} has ${[...methods, ...initialised].join(', ')}: resolvers receive inputs as plain objects; declare defaults with @Field({ defaultValue })`);
    }
  }
}

/** How a handler reads one parameter; undefined for a kind type-graphql must supply (custom decorators, @Args classes, typed @Root). */
function paramReader(param: ParamMetadata): ParamReader | undefined {
  switch (param.kind) {
    case 'arg': {
      const name = param.name;
      return (_root, args) => args[name];
    }
    case 'context': {
      const property = param.propertyName as keyof GraphQLContext | undefined;
      return property === undefined ? (_root, _args, context) => context : (_root, _args, context) => context[property];
    }
    case 'root': {
      // An untyped @Root (an interface or a type-only import reflects as Object) is passed as it is.
      if (param.getType && param.getType() !== Object) return undefined;
      const property = param.propertyName;
      return property === undefined ? (root) => root : (root) => (root as Record<string, unknown>)[property];
    }
    case 'info':
      return (_root, _args, _context, info) => info;
    default:
      return undefined;
  }
}

/**
 * A root field's or a resolver class's field resolver, calling the method
 * directly. type-graphql's own handler does, on every call: an object for its
 * middleware chain, a sort of the parameter list, and for each argument an
 * instance conversion and an async validation (so any field with an argument
 * answered through a promise and Promise.all, even from a cache). Atrium uses
 * none of that: validation is the services', policy the policy layer's.
 */
function directHandler(handler: HandlerMetadata): GraphQLFieldResolver<unknown, GraphQLContext> | undefined {
  const readers: ParamReader[] = [];
  for (const param of [...(handler.params ?? [])].sort((a, b) => a.index - b.index)) {
    const reader = paramReader(param);
    if (!reader) return undefined;
    readers.push(reader);
  }
  const target = handler.target as abstract new () => Record<string, (...params: unknown[]) => unknown>;
  const method = handler.methodName;
  switch (readers.length) {
    case 0:
      return (_root, _args, context) => context.container.get(target)[method]!();
    case 1: {
      const [first] = readers as [ParamReader];
      return (root, args, context, info) => context.container.get(target)[method]!(first(root, args, context, info));
    }
    default:
      return (root, args, context, info) => {
        const values = new Array<unknown>(readers.length);
        for (let i = 0; i < readers.length; i++) values[i] = readers[i]!(root, args, context, info);
        const instance = context.container.get(target);
        return instance[method]!(...values);
      };
  }
}

/** Replaces type-graphql's handler wrappers on this subgraph's root fields and field resolvers (see directHandler). */
function handlersCalledDirectly(schema: GraphQLSchema, definition: SubgraphDefinition): void {
  const metadata = getMetadataStorage();
  inputClassesArePlain(metadata, schema);
  const ours = new Set<unknown>(definition.resolvers);
  const typeNames = new Map<unknown, string>([...metadata.objectTypes, ...metadata.interfaceTypes].map((type) => [type.target, type.name]));
  const place = (typeName: string | undefined, handler: HandlerMetadata) => {
    if (!ours.has(handler.target) || typeName === undefined) return;
    const type = schema.getType(typeName);
    const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[handler.schemaName] : undefined;
    const resolve = field && directHandler(handler);
    if (field && resolve) field.resolve = resolve as GraphQLFieldResolver<unknown, unknown>;
  };
  for (const query of metadata.queries) place(schema.getQueryType()?.name, query);
  for (const mutation of metadata.mutations) place(schema.getMutationType()?.name, mutation);
  for (const fieldResolver of metadata.fieldResolvers) {
    if (fieldResolver.kind === 'external') place(typeNames.get(fieldResolver.getObjectType?.()), fieldResolver);
  }
}

export async function buildSubgraph(definition: SubgraphDefinition): Promise<BuiltSubgraph> {
  plainFieldsReadDirectly();
  mutationResultsFailAlone();
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
  handlersCalledDirectly(schema, definition);
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
