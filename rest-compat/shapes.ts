import {
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  parse,
  type GraphQLEnumType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type SelectionSetNode,
} from 'graphql';
import { restHints, restName, type RestHints } from '../subgraphs/rest';

/**
 * REST shapes derived from the GraphQL types, so each shape is written once
 * (the GraphQL type, with its REST hints): the selection a route runs, the
 * snake_case body it answers, and the JSON schemas of what it takes and
 * answers. Names are snake_case of the GraphQL names (or a hint's `name`);
 * enum values are the lower-case of their GraphQL names.
 */
export type JsonSchema = Record<string, unknown>;

/** JSON schema keywords a hint may contribute (its `name`, `items`, `required` and `notNull` are not keywords). */
function keywords(hints: RestHints | undefined): JsonSchema {
  if (!hints) return {};
  const { items: _items, name: _name, required: _required, notNull: _notNull, ...rest } = hints;
  return rest;
}

function scalarSchema(name: string): JsonSchema {
  switch (name) {
    case 'String':
    case 'ID':
      return { type: 'string' };
    case 'Int':
      // GraphQL's Int is 32-bit: a larger number is a validation issue at its request location, not a GraphQL coercion error.
      return { type: 'integer', minimum: -2147483648, maximum: 2147483647 };
    case 'Float':
      return { type: 'number' };
    case 'Boolean':
      return { type: 'boolean' };
    case 'DateTimeISO':
      return { type: 'string', format: 'date-time' };
    case 'JSONObject':
      return { type: 'object', additionalProperties: true };
    default:
      throw new Error(`The REST adapter has no JSON schema for the scalar ${name}`);
  }
}

const enumValues = (type: GraphQLEnumType) => type.getValues().map((v) => v.name.toLowerCase());

/** Makes a schema accept null too (JSON Schema 2020-12 as OpenAPI 3.1 reads it). */
function orNull(schema: JsonSchema): JsonSchema {
  const type = schema.type;
  const out: JsonSchema = { ...schema, type: Array.isArray(type) ? [...type, 'null'] : [type, 'null'] };
  if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
  return out;
}

// ---- output: what a route answers -------------------------------------------------------

/** How a GraphQL value becomes its REST body, and that body's schema. */
export type OutputPlan =
  | { kind: 'leaf'; schema: JsonSchema }
  | { kind: 'enum'; schema: JsonSchema }
  | { kind: 'list'; item: OutputPlan; schema: JsonSchema }
  | { kind: 'object'; fields: { key: string; rest: string; plan: OutputPlan }[]; schema: JsonSchema };

/** Every field of an object type, recursively: the selection a route runs unless it declares its own. */
export function fullSelection(type: GraphQLOutputType, depth = 0): string {
  const named = unwrap(type);
  if (!isObjectType(named)) return '';
  if (depth > 4) throw new Error(`${named.name} nests too deep for a derived REST body; declare the route's selection`);
  const parts = Object.values(named.getFields()).map((field) => {
    if (field.args.some((arg) => isNonNullType(arg.type) && arg.defaultValue === undefined)) {
      throw new Error(`${named.name}.${field.name} needs arguments; declare the route's selection`);
    }
    const inner = fullSelection(field.type, depth + 1);
    return inner ? `${field.name} ${inner}` : field.name;
  });
  return `{ ${parts.join(' ')} }`;
}

function unwrap(type: GraphQLOutputType | GraphQLInputType): ReturnType<typeof getNullableType> {
  let t = getNullableType(type);
  while (isListType(t)) t = getNullableType(t.ofType);
  return t;
}

/** The plan of a value of `type` as `selection` picks it (a `{ … }` selection for objects). */
export function outputPlan(type: GraphQLOutputType, selection: SelectionSetNode | undefined, hints?: RestHints, description?: string | null): OutputPlan {
  const nullable = !isNonNullType(type);
  const inner = getNullableType(type);
  const describe = (schema: JsonSchema) => (description && !schema.description ? { description, ...schema } : schema);
  let plan: OutputPlan;
  if (isListType(inner)) {
    const item = outputPlan(inner.ofType, selection, hints?.items);
    plan = { kind: 'list', item, schema: { type: 'array', items: item.schema, ...keywords(hints) } };
  } else if (isEnumType(inner)) {
    plan = { kind: 'enum', schema: { type: 'string', enum: enumValues(inner), ...keywords(hints) } };
  } else if (isScalarType(inner)) {
    plan = { kind: 'leaf', schema: { ...scalarSchema(inner.name), ...keywords(hints) } };
  } else if (isObjectType(inner)) {
    if (!selection) throw new Error(`${inner.name} needs a selection`);
    plan = objectPlan(inner, selection, hints);
  } else {
    throw new Error(`The REST adapter cannot answer a ${String(inner)}`);
  }
  const schema = describe(nullable ? orNull(plan.schema) : plan.schema);
  return { ...plan, schema } as OutputPlan;
}

function objectPlan(type: GraphQLObjectType, selection: SelectionSetNode, hints?: RestHints): OutputPlan {
  const fields: { key: string; rest: string; plan: OutputPlan }[] = [];
  for (const node of selection.selections) {
    if (node.kind !== Kind.FIELD) throw new Error(`REST selections of ${type.name} use plain fields only`);
    const field = type.getFields()[node.name.value];
    if (!field) throw new Error(`${type.name} has no field ${node.name.value}`);
    const key = node.alias?.value ?? field.name;
    fields.push({ key, rest: restName(field), plan: outputPlan(field.type, node.selectionSet, restHints(field), field.description) });
  }
  const properties = Object.fromEntries(fields.map((f) => [f.rest, f.plan.schema]));
  return {
    kind: 'object',
    fields,
    schema: { type: 'object', ...keywords(hints), required: fields.map((f) => f.rest), properties },
  };
}

/** The plan of a root field's value for a selection text (`{ … }`, or empty for a leaf). */
export function fieldOutputPlan(field: GraphQLField<unknown, unknown>, selection: string): OutputPlan {
  const set = selection ? (parse(`{ x ${selection} }`).definitions[0] as { selectionSet: SelectionSetNode }).selectionSet : undefined;
  const node = set?.selections[0];
  return outputPlan(field.type, node && node.kind === Kind.FIELD ? node.selectionSet : undefined);
}

/**
 * The function that turns a GraphQL value of `plan` into its REST body:
 * snake_case keys, lower-case enum values, null for absent values. Compiled
 * once per route into straight-line code (as graphql-jit compiles the
 * operation): each object is built as one literal, so every body of a route
 * has one shape, which is faster to build and to serialize than a walk of
 * the plan. Keys come from the schema and are quoted with JSON.stringify.
 */
export function compileRestMapper(plan: OutputPlan): (value: unknown) => unknown {
  const helpers: ((value: unknown) => unknown)[] = [];
  const expression = (node: OutputPlan, value: string): string => {
    switch (node.kind) {
      case 'leaf':
        return `(${value} ?? null)`;
      case 'enum':
        return `(${value} == null ? null : ${value}.toLowerCase())`;
      case 'list': {
        helpers.push(compileRestMapper(node.item));
        return `(${value} == null ? null : ${value}.map(h[${helpers.length - 1}]))`;
      }
      case 'object': {
        // A nested object gets its own function: its value is read once.
        const body = node.fields.map((f) => `${JSON.stringify(f.rest)}: ${expression(f.plan, `v[${JSON.stringify(f.key)}]`)}`).join(', ');
        helpers.push(new Function('h', `return (v) => (v == null ? null : { ${body} });`)(helpers) as (value: unknown) => unknown);
        return `h[${helpers.length - 1}](${value})`;
      }
    }
  };
  const top = expression(plan, 'v');
  return new Function('h', `return (v) => ${top};`)(helpers) as (value: unknown) => unknown;
}

// ---- input: what a route takes ---------------------------------------------------------

/**
 * The JSON schema of a REST value that becomes a GraphQL input of `type`
 * (objects reject unknown members). A nullable GraphQL type takes null, as
 * GraphQL does: the value reaches the resolver as null, so both transports
 * answer it alike. In a query string nothing is null: its members are
 * typed without it.
 */
export function inputSchema(type: GraphQLInputType, hints?: RestHints, description?: string | null, inQuery = false): JsonSchema {
  const nullable = !inQuery && !isNonNullType(type) && !hints?.notNull;
  const inner = getNullableType(type);
  let schema: JsonSchema;
  if (isListType(inner)) {
    schema = { type: 'array', items: inputSchema(inner.ofType, hints?.items, undefined, inQuery), ...keywords(hints) };
  } else if (isEnumType(inner)) {
    schema = { type: 'string', enum: enumValues(inner), ...keywords(hints) };
  } else if (isScalarType(inner)) {
    schema = { ...scalarSchema(inner.name), ...keywords(hints) };
  } else if (isInputObjectType(inner)) {
    const fields = Object.values(inner.getFields());
    const required = fields.filter((f) => (isNonNullType(f.type) && f.defaultValue === undefined) || restHints(f)?.required).map(restName);
    schema = {
      type: 'object',
      ...(required.length ? { required } : {}),
      additionalProperties: false,
      properties: Object.fromEntries(fields.map((f) => [restName(f), inputSchema(f.type, restHints(f), f.description, inQuery)])),
      ...keywords(hints),
    };
  } else {
    throw new Error(`The REST adapter cannot take a ${String(inner)}`);
  }
  if (description && !schema.description) schema = { description, ...schema };
  return nullable ? orNull(schema) : schema;
}

/**
 * A REST value (snake_case keys, lower-case enum values) as the GraphQL
 * input of `type`. Only the fields the value carries are set: a field left
 * out of a PATCH body stays out of the input, which is what keeps it
 * unchanged.
 */
export function toGraphQLInput(type: GraphQLInputType, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const inner = getNullableType(type);
  if (isListType(inner)) return (value as unknown[]).map((item) => toGraphQLInput(inner.ofType, item));
  if (isEnumType(inner)) return inner.getValues().find((v) => v.name.toLowerCase() === value)?.name ?? value;
  if (isInputObjectType(inner)) {
    const source = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const field of Object.values(inner.getFields())) {
      const key = restName(field);
      if (Object.prototype.hasOwnProperty.call(source, key)) out[field.name] = toGraphQLInput(field.type, source[key]);
    }
    return out;
  }
  return value;
}
