import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { withFormats } from '../../src/json-formats';
import { getNullableType, isEnumType, isInputObjectType, isListType, isNonNullType, type GraphQLInputType } from 'graphql';
import { AppError } from '../../src/errors/catalog';
import { validationIssues } from '../../src/errors/to-app-error';
import { restHints, type RestHints } from '../rest';

/**
 * The bounds a field's REST hints declare (lengths, sizes, ranges, formats,
 * patterns), enforced on the GraphQL arguments too, so each transport
 * refuses the same inputs: REST validates them with its derived JSON
 * schemas before the field runs; GraphQL reaches this check in the policy
 * layer (./enforce.ts). Both use Ajv, so an issue reads the same on both.
 * A value declared a UUID (`format: 'uuid'`, ../rest.ts UUID) then reaches
 * the resolver lower-case on every transport, as ids are stored.
 */

type JsonSchema = Record<string, unknown>;

/** The hint members that bound a value (the rest name or describe it). */
const BOUND_KEYWORDS = ['format', 'enum', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems'] as const;

/** An argument of a root field, with the hints its field declares for it (`@RestArgs`). */
export interface BoundedArgument {
  name: string;
  type: GraphQLInputType;
  hints?: RestHints;
}

function boundsOf(hints: RestHints | undefined, enumType: boolean): JsonSchema | undefined {
  if (!hints) return undefined;
  const out: JsonSchema = {};
  for (const keyword of BOUND_KEYWORDS) {
    // A GraphQL enum is checked by GraphQL itself; its hint lists the REST spelling (lower case).
    if (keyword === 'enum' && enumType) continue;
    if (hints[keyword] !== undefined) out[keyword] = hints[keyword];
  }
  return Object.keys(out).length ? out : undefined;
}

/** The JSON schema of what bounds a GraphQL value of `type` (GraphQL names; types are GraphQL's to check); undefined when nothing does. */
function boundsSchema(type: GraphQLInputType, hints: RestHints | undefined, within: ReadonlySet<GraphQLInputType>): JsonSchema | undefined {
  const inner = getNullableType(type);
  const own = boundsOf(hints, isEnumType(inner));
  let schema: JsonSchema | undefined = own;
  if (isListType(inner)) {
    const items = boundsSchema(inner.ofType as GraphQLInputType, hints?.items, within);
    if (items) schema = { ...own, items };
  } else if (isInputObjectType(inner) && !within.has(inner)) {
    const nested = new Set(within).add(inner);
    const properties: Record<string, JsonSchema> = {};
    for (const field of Object.values(inner.getFields())) {
      const member = boundsSchema(field.type, restHints(field), nested);
      if (member) properties[field.name] = member;
    }
    if (Object.keys(properties).length) schema = { ...own, properties };
  }
  // An optional value may be null: null is GraphQL's "not given", never out of bounds.
  if (schema && Array.isArray(schema.enum) && !isNonNullType(type)) schema = { ...schema, enum: [...(schema.enum as unknown[]), null] };
  return schema;
}

const ajv = withFormats(new Ajv({ allErrors: true, strict: false, coerceTypes: false }));
/** One compiled check per distinct schema: every app built in one process (tests build many) shares them. */
const compiled = new Map<string, ValidateFunction>();

/** A root field's arguments against their declared bounds, before its resolver runs. */
export interface ArgumentBounds {
  /** The 422 validation error with each issue at its path among the arguments, or undefined. */
  refuse(values: Record<string, unknown>): AppError | undefined;
  /** The arguments as the resolver reads them: each UUID lower-case, as ids are stored (RFC 9562: UUIDs are case-insensitive). */
  canonical(values: Record<string, unknown>): Record<string, unknown>;
}

/** Undefined (nothing to do at all) when no argument is bounded. */
export function compileBounds(args: readonly BoundedArgument[]): ArgumentBounds | undefined {
  const properties: Record<string, JsonSchema> = {};
  for (const arg of args) {
    const schema = boundsSchema(arg.type, arg.hints, new Set());
    if (schema) properties[arg.name] = schema;
  }
  if (!Object.keys(properties).length) return undefined;
  const schema = { type: 'object', properties };
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
  const check = validate;
  const lower = lowerMembers(args.map((arg) => ({ name: arg.name, lower: lowering(arg.type, arg.hints, new Set()) })));
  return {
    refuse(values) {
      if (check(values)) return undefined;
      // Ajv's issues as REST words them, located among the arguments rather than in a request part.
      const issues = validationIssues({ validation: check.errors as ErrorObject[] }).map((issue) => ({ ...issue, loc: issue.loc.slice(1) }));
      return AppError.validation(issues);
    },
    canonical: lower ? (values) => lower(values) as Record<string, unknown> : (values) => values,
  };
}

type Lower = (value: unknown) => unknown;

const lowerCase: Lower = (value) => (typeof value === 'string' ? value.toLowerCase() : value);

/** How a value of `type` gets its UUIDs lower-cased (the walk of boundsSchema); undefined when it holds none. */
function lowering(type: GraphQLInputType, hints: RestHints | undefined, within: ReadonlySet<GraphQLInputType>): Lower | undefined {
  const inner = getNullableType(type);
  if (isListType(inner)) {
    const item = lowering(inner.ofType as GraphQLInputType, hints?.items, within);
    return item && ((value) => (Array.isArray(value) ? value.map(item) : value));
  }
  if (isInputObjectType(inner)) {
    if (within.has(inner)) return undefined;
    const nested = new Set(within).add(inner);
    return lowerMembers(Object.values(inner.getFields()).map((field) => ({ name: field.name, lower: lowering(field.type, restHints(field), nested) })));
  }
  return hints?.format === 'uuid' ? lowerCase : undefined;
}

/** A copy of an object with each member that holds UUIDs lowered; undefined when none does. */
function lowerMembers(members: readonly { name: string; lower: Lower | undefined }[]): Lower | undefined {
  const lowered = members.filter((member): member is { name: string; lower: Lower } => member.lower !== undefined);
  if (!lowered.length) return undefined;
  return (value) => {
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const { name, lower } of lowered) if (out[name] !== undefined) out[name] = lower(out[name]);
    return out;
  };
}

/** An entity type's key fields (`@key(fields: "id")`), each with the hints of its field. */
export type EntityKeys = ReadonlyMap<string, readonly { name: string; hints?: RestHints }[]>;

/**
 * The representations `_entities` is asked for (a standalone subgraph), held
 * to their key fields' declared bounds as a root field's arguments are: each
 * key field present and a string, a UUID where the field is declared one (a
 * non-UUID id names no row here, as `adminUser(userId: "nope")` does not),
 * then lowered as ids are stored, so an upper-cased id names the same entity.
 * Each issue is at its path among the arguments (`["representations", 0, "id"]`).
 */
export function compileRepresentationKeys(keys: EntityKeys): ArgumentBounds {
  const checks = new Map<string, { validate: ValidateFunction; uuids: string[] }>();
  for (const [typeName, fields] of keys) {
    const properties: Record<string, JsonSchema> = {};
    for (const { name, hints } of fields) properties[name] = { type: 'string', ...boundsOf(hints, false) };
    const schema = { type: 'object', required: fields.map((f) => f.name), properties };
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
    checks.set(typeName, { validate, uuids: fields.filter((f) => f.hints?.format === 'uuid').map((f) => f.name) });
  }
  const checkOf = (representation: unknown) => checks.get((representation as { __typename?: unknown } | null)?.__typename as string);
  const representationsOf = (values: Record<string, unknown>) => (Array.isArray(values.representations) ? values.representations : []);
  return {
    refuse(values) {
      const issues = representationsOf(values).flatMap((representation, i) => {
        const check = checkOf(representation);
        if (!check || check.validate(representation)) return [];
        return validationIssues({ validation: check.validate.errors as ErrorObject[] }).map((issue) => ({ ...issue, loc: ['representations', i, ...issue.loc.slice(1)] }));
      });
      return issues.length ? AppError.validation(issues) : undefined;
    },
    canonical(values) {
      const representations = representationsOf(values).map((representation) => {
        const uuids = checkOf(representation)?.uuids;
        if (!uuids?.length) return representation;
        const out = { ...(representation as Record<string, unknown>) };
        for (const name of uuids) out[name] = lowerCase(out[name]);
        return out;
      });
      return { ...values, representations };
    },
  };
}
