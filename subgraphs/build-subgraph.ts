import 'reflect-metadata';
import { buildSchema, createResolversMap, type NonEmptyArray } from 'type-graphql';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse, type GraphQLSchema } from 'graphql';
import { DateTimeISO } from './date-time';

export const subgraphNames = ['identity', 'admin', 'billing', 'modules'] as const;
export type SubgraphName = (typeof subgraphNames)[number];

/** Federation 2 header every subgraph SDL starts with. */
const FEDERATION_LINK = `extend schema
  @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable"])
`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ReferenceResolver = (reference: any, context: any) => unknown;

export interface SubgraphDefinition {
  name: SubgraphName;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  resolvers: NonEmptyArray<Function>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  orphanedTypes?: Function[];
  /** `__resolveReference` per entity type this subgraph can resolve by key. */
  references?: Record<string, ReferenceResolver>;
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
 * `subscribe`. Atrium's subscriptions read the core event bus from the
 * context (one bus per running app), so topic-based use is refused loudly.
 */
const contextBusOnly = {
  publish(): never {
    throw new Error('Publish through services.bus; subscriptions read the core event bus');
  },
  subscribe(): never {
    throw new Error('Declare @Subscription({ subscribe }) over ctx.services.bus; topics are not used');
  },
};

export async function buildSubgraph(definition: SubgraphDefinition): Promise<BuiltSubgraph> {
  const schema = await buildSchema({
    resolvers: definition.resolvers,
    orphanedTypes: definition.orphanedTypes,
    // A subgraph may have no Query of its own (it only extends entities).
    skipCheck: true,
    // Input rules live in the core services, once for every transport.
    validate: false,
    pubSub: contextBusOnly,
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
  });
  const sdl = `${FEDERATION_LINK}\n${printSchemaWithDirectives(schema)}\n`;
  return { name: definition.name, schema, sdl, references: definition.references ?? {} };
}

/** The subgraph as a standalone federated service (`_service`, `_entities`). */
export function federatedSchema(subgraph: BuiltSubgraph): GraphQLSchema {
  const resolvers = createResolversMap(subgraph.schema) as Record<string, Record<string, unknown>>;
  for (const [typeName, resolveReference] of Object.entries(subgraph.references)) {
    resolvers[typeName] = { ...(resolvers[typeName] ?? {}), __resolveReference: resolveReference };
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return buildSubgraphSchema({ typeDefs: parse(subgraph.sdl), resolvers: resolvers as any });
}
