import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { parse, validate, type GraphQLSchema } from 'graphql';

/**
 * A REST route's GraphQL operation, parsed, validated and compiled with
 * graphql-jit once, at start-up, against the schema /graphql serves: the
 * route runs exactly the resolvers a GraphQL client reaches, without paying
 * per request for the document cache lookup and hooks of a GraphQL request.
 * A document that does not fit the schema stops the server from starting.
 */
export function compileOperation(schema: GraphQLSchema, source: string, route: string): CompiledQuery {
  const document = parse(source);
  const errors = validate(schema, document);
  if (errors.length) throw new Error(`The GraphQL operation of ${route} does not fit the schema: ${errors.map((e) => e.message).join('; ')}`);
  const compiled = compileQuery(schema, document);
  if (!isCompiledQuery(compiled)) {
    throw new Error(`The GraphQL operation of ${route} does not compile: ${compiled.errors?.map((e) => e.message).join('; ')}`);
  }
  return compiled;
}
