import { getNullableType, GraphQLNonNull, isNonNullType, parse, type GraphQLField, type GraphQLInputType, type GraphQLSchema } from 'graphql';
import type { FastifyRequest } from 'fastify';
import { fieldPolicy, type FieldPolicy } from '../subgraphs/policy/access';
import { compileRestMapper, fieldOutputPlan, fullSelection, inputSchema, toGraphQLInput, type JsonSchema } from './shapes';
import { isRawRoute, type ArgSource, type GraphQLRoute, type RestRoute } from './route';
import { restArgHints, snake, type RestHints } from '../subgraphs/rest';
import { OperationMeter } from '../subgraphs/policy/limits';
import { UNSCHEDULED_COST } from '../subgraphs/policy/scheduler';

/** Bounds live on the field (`@RestArgs`), where GraphQL enforces them too; a route's hints only say how REST spells and documents a value. */
const FIELD_ONLY_HINTS = ['format', 'minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems', 'pattern'] as const;

/** A route as the adapter serves it and the OpenAPI document describes it. */
export interface CompiledRoute {
  route: RestRoute;
  /** The credential requirement and the budget: the field's policy, or a raw route's own. */
  policy: FieldPolicy;
  request: { params?: JsonSchema; querystring?: JsonSchema; body?: JsonSchema };
  /** The success body's schema (none for 204 and redirects). */
  response?: JsonSchema;
  /** How a GraphQL route runs its field. */
  operation?: {
    /** The GraphQL document, built once from the field, its arguments and the selection. */
    document: string;
    variables(request: FastifyRequest): Record<string, unknown>;
    /** The field's value as the REST body. */
    body(value: unknown): unknown;
    /** The root field whose value is the answer. */
    field: string;
    /**
     * Whether the operation can be heavy enough to take its turn with other heavier operations (a page
     * size counted at its most), and so answer 503 server_busy when too many are waiting.
     */
    mayWait: boolean;
  };
}

/** Compiles every route against the served schema; a route that does not fit it stops the server. */
export function compileRoutes(schema: GraphQLSchema, routes: readonly RestRoute[]): CompiledRoute[] {
  // Measures only (no caps): what an operation may cost, as the gate will count it.
  const meter = new OperationMeter(schema, { maxTokens: Infinity, maxDepth: Infinity, maxAliases: Infinity, maxRootFields: Infinity, maxCost: Infinity });
  return routes.map((route) => {
    try {
      return isRawRoute(route)
        ? {
            route,
            policy: { auth: route.auth === 'public' ? 'public' : 'authenticated', ...(route.rateLimit && route.rateLimit !== 'default' ? { rateLimit: route.rateLimit } : {}) },
            request: route.request ?? {},
            response: route.response,
          }
        : compileGraphQLRoute(schema, meter, route);
    } catch (error) {
      throw new Error(`REST route ${route.method} ${route.path}: ${(error as Error).message}`, { cause: error });
    }
  });
}

function compileGraphQLRoute(schema: GraphQLSchema, meter: OperationMeter, route: GraphQLRoute): CompiledRoute {
  const { operation, field } = rootField(schema, route.field);
  const policy = fieldPolicy(field);
  if (!policy) throw new Error(`${route.field} declares no access policy`);
  const args = Object.entries(route.args ?? {});
  for (const [name, source] of args) {
    if (!field.args.some((a) => a.name === name)) throw new Error(`${route.field} has no argument ${name}`);
    const bound = FIELD_ONLY_HINTS.find((keyword) => 'hints' in source && source.hints?.[keyword] !== undefined);
    if (bound) throw new Error(`the hint ${bound} of ${name} bounds GraphQL too: declare it on ${route.field} (@RestArgs)`);
    // A service locates a validation issue at the REST member; GraphQL finds the argument back by its REST name.
    const restName = restArgHints(field, name)?.name ?? snake(name);
    if ('name' in source && source.in !== 'path' && source.name !== restName) {
      throw new Error(`${route.field}'s argument ${name} is the ${source.in} member ${source.name}: declare that name on the field (@RestArgs({ ${name}: { name: '${source.name}' } }))`);
    }
  }
  for (const [member, hints] of Object.entries(route.bodyHints?.properties ?? {})) {
    const bound = FIELD_ONLY_HINTS.find((keyword) => hints[keyword] !== undefined);
    if (bound) throw new Error(`the body hint ${bound} of ${member} bounds GraphQL too: declare it on the input field (@Rest)`);
  }
  const missing = field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined && !route.args?.[a.name]);
  if (missing.length) throw new Error(`${route.field} needs ${missing.map((a) => a.name).join(', ')} and the route maps none`);

  const selection = route.status === 204 ? '' : route.select !== undefined ? `{ ${route.select} }` : fullSelection(field.type);
  // A mutation's result is nullable only so that it can fail alone (subgraphs/build-subgraph.ts); a
  // REST call runs one field, which answers a value or an error, never null.
  const answered = operation === 'mutation' ? { ...field, type: new GraphQLNonNull(getNullableType(field.type)) } : field;
  const plan = route.status === 204 ? undefined : fieldOutputPlan(answered, selection);
  const toBody = plan && compileRestMapper(plan);
  const variableDefinitions = args.map(([name]) => `$${name}: ${String(field.args.find((a) => a.name === name)!.type)}`);
  const document =
    `${operation} ${route.operationId}${variableDefinitions.length ? `(${variableDefinitions.join(', ')})` : ''} ` +
    `{ ${route.field}${args.length ? `(${args.map(([name]) => `${name}: $${name}`).join(', ')})` : ''} ${selection} }`;

  const readers = args.map(([name, source]) => {
    const type = field.args.find((a) => a.name === name)!.type;
    return [name, reader(source, type)] as const;
  });
  const answer = route.answer;
  return {
    route,
    policy,
    request: requestSchemas(route, field),
    ...(plan ? { response: answer ? answer.schema(plan.schema) : plan.schema } : {}),
    operation: {
      document,
      field: route.field,
      // A page size not yet known counts at its most here (the meter's default), as the largest page a client may ask for.
      mayWait: meter.measure(parse(document)).operations[0]!.cost >= UNSCHEDULED_COST,
      variables(request) {
        const variables: Record<string, unknown> = {};
        for (const [name, read] of readers) {
          const value = read(request);
          if (value !== undefined) variables[name] = value;
        }
        return variables;
      },
      body(value) {
        if (!plan) return undefined;
        const derived = toBody!(value);
        return answer ? answer.body(derived as never) : derived;
      },
    },
  };
}

function rootField(schema: GraphQLSchema, name: string): { operation: 'query' | 'mutation'; field: GraphQLField<unknown, unknown> } {
  const query = schema.getQueryType()?.getFields()[name];
  if (query) return { operation: 'query', field: query };
  const mutation = schema.getMutationType()?.getFields()[name];
  if (mutation) return { operation: 'mutation', field: mutation };
  throw new Error(`the served schema has no query or mutation ${name}`);
}

function reader(source: ArgSource, type: GraphQLInputType): (request: FastifyRequest) => unknown {
  if ('whole' in source) return (request) => toGraphQLInput(type, (source.in === 'query' ? request.query : request.body) ?? {});
  // A path or query value is converted like a body member: an enum's lower-case REST value becomes its GraphQL name.
  if (source.in === 'path') return (request) => toGraphQLInput(type, (request.params as Record<string, unknown>)[source.name]);
  if (source.in === 'query') return (request) => toGraphQLInput(type, (request.query as Record<string, unknown>)[source.name]);
  return (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    return Object.prototype.hasOwnProperty.call(body, source.name) ? toGraphQLInput(type, body[source.name]) : undefined;
  };
}

/** The JSON schemas of the path, query and body, derived from the field's argument types and the route's hints. */
function requestSchemas(route: GraphQLRoute, field: GraphQLField<unknown, unknown>): CompiledRoute['request'] {
  const out: CompiledRoute['request'] = {};
  const params: Record<string, JsonSchema> = {};
  const queryProperties: Record<string, JsonSchema> = {};
  const queryRequired: string[] = [];
  const bodyProperties: Record<string, JsonSchema> = {};
  const bodyRequired: string[] = [];
  for (const [name, source] of Object.entries(route.args ?? {})) {
    const arg = field.args.find((a) => a.name === name)!;
    const required = isNonNullType(arg.type) && arg.defaultValue === undefined;
    if ('whole' in source) {
      const whole = new GraphQLNonNull(getNullableType(arg.type));
      if (source.in === 'query') out.querystring = inputSchema(whole, undefined, undefined, true);
      else out.body = withBodyHints(inputSchema(whole), route);
      continue;
    }
    const hints: RestHints | undefined = source.hints || restArgHints(field, name) ? { ...restArgHints(field, name), ...source.hints } : undefined;
    // Path and query values are never null: their schema is the non-null type's, and so are their items'.
    const schema = inputSchema(new GraphQLNonNull(getNullableType(arg.type)), hints, arg.description, true);
    if (source.in === 'path') params[source.name] = schema;
    else if (source.in === 'query') {
      queryProperties[source.name] = arg.defaultValue === undefined ? schema : { ...schema, default: arg.defaultValue };
      if (required) queryRequired.push(source.name);
    } else {
      bodyProperties[source.name] = inputSchema(arg.type, hints, arg.description);
      if (required) bodyRequired.push(source.name);
    }
  }
  if (Object.keys(params).length) out.params = { type: 'object', required: Object.keys(params), properties: params };
  // Every route states its query string, an empty one included: an unknown parameter is refused
  // (422) everywhere alike, never silently ignored (`?dry_run=true` on a grant would still grant).
  if (Object.keys(queryProperties).length || !out.querystring) {
    out.querystring = {
      type: 'object',
      ...(queryRequired.length ? { required: queryRequired } : {}),
      additionalProperties: false,
      properties: queryProperties,
    };
  }
  if (Object.keys(bodyProperties).length) {
    out.body = withBodyHints(
      { type: 'object', ...(bodyRequired.length ? { required: bodyRequired } : {}), additionalProperties: false, properties: bodyProperties },
      route,
    );
  }
  return out;
}

function withBodyHints(schema: JsonSchema, route: GraphQLRoute): JsonSchema {
  const hints = route.bodyHints;
  if (!hints) return schema;
  const properties = { ...(schema.properties as Record<string, JsonSchema>) };
  for (const [name, extra] of Object.entries(hints.properties ?? {})) {
    const derived = properties[name];
    if (!derived) throw new Error(`the body has no member ${name} to hint`);
    properties[name] = { ...derived, ...extra };
    // A hint's enum respells the values; a member that takes null still does.
    if (extra.enum && Array.isArray(derived.type) && derived.type.includes('null')) properties[name].enum = [...extra.enum, null];
  }
  return {
    ...(hints.title ? { title: hints.title } : {}),
    ...(hints.description ? { description: hints.description } : {}),
    ...schema,
    ...(hints.required ? { required: hints.required } : {}),
    ...(hints.minProperties !== undefined ? { minProperties: hints.minProperties } : {}),
    properties,
  };
}
