import { composeServices } from '@theguild/federation-composition';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import {
  buildSchema,
  GraphQLEnumType,
  isEnumType,
  isInputObjectType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  parse,
  lexicographicSortSchema,
  printSchema,
  type GraphQLFieldConfig,
  type GraphQLInputFieldConfig,
  type GraphQLScalarType,
  type GraphQLSchema,
} from 'graphql';
import { buildSubgraph, resolverInstances, type BuiltSubgraph, type SubgraphDefinition } from './build-subgraph';
import { ResolverContainer } from './context';
import { identitySubgraph } from './identity';
import { adminSubgraph } from './admin';
import { billingSubgraph } from './billing';
import { modulesSubgraph } from './modules';

export const subgraphDefinitions: readonly SubgraphDefinition[] = [identitySubgraph, adminSubgraph, billingSubgraph, modulesSubgraph];

/** The resolvers of every subgraph, built from one app's domain APIs (single-node mode). */
export function supergraphContainer(apis: Record<string, unknown>): ResolverContainer {
  return new ResolverContainer(resolverInstances(subgraphDefinitions, apis));
}

export interface Supergraph {
  subgraphs: BuiltSubgraph[];
  /** Composed supergraph SDL, what a federation gateway reads. */
  supergraphSdl: string;
  /** The client-facing API schema SDL. */
  apiSdl: string;
  /** The API schema, executable in-process (single-node mode). */
  schema: GraphQLSchema;
}

let built: Promise<BuiltSubgraph[]> | undefined;

/** type-graphql keeps global metadata, so each subgraph is built once per process. */
export function buildSubgraphs(): Promise<BuiltSubgraph[]> {
  return (built ??= Promise.all(subgraphDefinitions.map(buildSubgraph)));
}

export function compose(subgraphs: BuiltSubgraph[]): { supergraphSdl: string; apiSdl: string } {
  const result = composeServices(
    subgraphs.map((s) => ({ name: s.name, typeDefs: parse(s.sdl), url: `http://${s.name}.atrium.internal/graphql` })),
  );
  if (result.errors?.length) {
    throw new Error(`Supergraph composition failed:\n${result.errors.map((e) => `- ${e.message}`).join('\n')}`);
  }
  const apiSdl = printSchema(lexicographicSortSchema(buildSchema(result.publicSdl!)));
  return { supergraphSdl: result.supergraphSdl!, apiSdl };
}

/**
 * Single-node execution: the API schema, with each field's resolver taken from
 * the subgraph that defines it. An entity-extension field (Company.plan) gets
 * the owning subgraph's object, which always carries the key fields.
 */
export async function buildSupergraph(): Promise<Supergraph> {
  const subgraphs = await buildSubgraphs();
  const { supergraphSdl, apiSdl } = compose(subgraphs);
  const implementations = collectImplementations(subgraphs);
  const schema = mapSchema(buildSchema(apiSdl), {
    [MapperKind.SCALAR_TYPE]: (type) => (implementations.scalars.get(type.name) ?? type),
    [MapperKind.ENUM_TYPE]: (type) => {
      const source = implementations.enums.get(type.name);
      if (!source) return type;
      const config = type.toConfig();
      for (const [name, value] of Object.entries(config.values)) {
        value.value = source.getValue(name)?.value ?? name;
      }
      return new GraphQLEnumType(config);
    },
    // Input fields carry the REST adapter's hints (subgraphs/rest.ts).
    [MapperKind.INPUT_OBJECT_FIELD]: (fieldConfig, fieldName, typeName) => {
      const source = implementations.inputFields.get(`${typeName}.${fieldName}`);
      return source ? { ...fieldConfig, extensions: source.extensions } : fieldConfig;
    },
    [MapperKind.OBJECT_FIELD]: (fieldConfig, fieldName, typeName) => {
      const source = implementations.fields.get(`${typeName}.${fieldName}`);
      if (!source) return fieldConfig;
      // Extensions carry each field's declared policy (subgraphs/policy).
      return { ...fieldConfig, resolve: source.resolve, subscribe: source.subscribe, extensions: source.extensions };
    },
  });
  return { subgraphs, supergraphSdl, apiSdl, schema };
}

function collectImplementations(subgraphs: BuiltSubgraph[]) {
  const fields = new Map<string, GraphQLFieldConfig<unknown, unknown>>();
  const inputFields = new Map<string, GraphQLInputFieldConfig>();
  const scalars = new Map<string, GraphQLScalarType>();
  const enums = new Map<string, GraphQLEnumType>();
  for (const subgraph of subgraphs) {
    for (const type of Object.values(subgraph.schema.getTypeMap())) {
      if (type.name.startsWith('__')) continue;
      if (isScalarType(type)) {
        if (!isSpecifiedScalarType(type)) scalars.set(type.name, type);
      } else if (isEnumType(type)) {
        enums.set(type.name, type);
      } else if (isInputObjectType(type)) {
        for (const [name, field] of Object.entries(type.toConfig().fields)) inputFields.set(`${type.name}.${name}`, field);
      } else if (isObjectType(type)) {
        for (const [name, field] of Object.entries(type.toConfig().fields)) {
          // A field with its own resolver wins over an entity extension's plain key field.
          const key = `${type.name}.${name}`;
          if (!fields.has(key) || field.resolve) fields.set(key, field);
        }
      }
    }
  }
  return { fields, inputFields, scalars, enums };
}
