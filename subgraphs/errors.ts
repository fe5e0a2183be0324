import { getNullableType, GraphQLError, isInputObjectType, isListType, type GraphQLInputField, type GraphQLInputType } from 'graphql';
import { AppError, errorEntry, isAppError, validationIssues, type ErrorCode, type ValidationIssue } from '../src/errors/catalog';
import { toAppError } from '../src/errors/to-app-error';
import { logServerSide, type ServerSideLog } from '../src/errors/server-side-log';
import { restName, snake } from './rest';

/**
 * A graphql-js message without its "Did you mean …?" hint (an unknown field,
 * argument, type, input field or enum value, which graphql-js answers with
 * the schema's nearest names): for a caller who may not introspect.
 */
export function withoutSuggestions(message: string): string {
  const at = message.indexOf(' Did you mean ');
  return at === -1 ? message : message.slice(0, at);
}

/** A mutation (or subscription) sent with GET: 405, on /graphql and on a standalone subgraph alike. */
export const onlyQueriesOverGet = (): AppError => new AppError('method_not_allowed', 'Only queries may be sent with GET; use POST');

/**
 * The GraphQL error shape, for every transport: the catalog code and the
 * HTTP status in extensions (`extensions.http`, headers included, as
 * GraphQL-over-HTTP servers read it). Unknown errors are logged and masked.
 * `hideSchema`: the caller may not introspect, so graphql-js' own messages
 * lose their suggestions.
 */
export function toGraphQLError(
  error: GraphQLError,
  log: ServerSideLog,
  options: { hideSchema?: boolean } = {},
): GraphQLError {
  const original = error.originalError;
  let appError: AppError;
  if (isAppError(original)) appError = original;
  else if (!original || original instanceof GraphQLError) {
    // graphql-js' own errors: the document or its variables do not fit the schema.
    appError = new AppError('bad_request', options.hideSchema ? withoutSuggestions(error.message) : error.message);
  } else {
    // Transport errors (body parsing, size, media type) map like REST; anything else is masked.
    appError = toAppError(original);
  }
  if (appError.status >= 500) logServerSide(log, original, appError);
  return new GraphQLError(appError.message, {
    nodes: error.nodes,
    path: error.path,
    extensions: {
      code: appError.code,
      // The error's HTTP meaning travels with it, headers included (Retry-After).
      http: Object.keys(appError.headers).length ? { status: appError.status, headers: appError.headers } : { status: appError.status },
      ...appError.extra,
      ...graphqlIssues(appError),
    },
  });
}

/** Rebuilds the catalog error a resolver threw from its GraphQL form (the REST adapter answers it as a problem). */
export function fromGraphQLError(error: GraphQLError): AppError {
  const { code, http, ...extra } = error.extensions as {
    code?: string;
    http?: { headers?: Record<string, string> };
  } & Record<string, unknown>;
  const known = code !== undefined && errorEntry(code) ? (code as ErrorCode) : 'internal_error';
  return new AppError(known, error.message, { extra, headers: http?.headers });
}

// ---- where a validation issue is: each transport names it its own way ----------------------

/** The parts of a REST request a service's `loc` starts with. */
const REQUEST_PARTS = new Set<unknown>(['body', 'query', 'path']);

/** A root field's argument, as the policy layer's wrapper sees it. */
export interface FieldArgument {
  name: string;
  type: GraphQLInputType;
  /** The member REST names it by when that is not its snake_case name (the `name` of its `@RestArgs` hint). */
  restName?: string;
}

/**
 * A service's request location (`['body', 'invitations', 0, 'role']`) as the
 * path among the field's arguments (`['input', 'invitations', 0, 'role']`).
 * REST derives its members from the arguments by one naming rule (an
 * argument's REST name, or an input's fields by their REST names), so
 * the same rule read backwards finds the argument: a member named like an
 * argument is that argument; otherwise a field of an input-object argument
 * (a whole body). Undefined when nothing matches.
 */
export function argumentPath(loc: readonly (string | number)[], args: readonly FieldArgument[]): (string | number)[] | undefined {
  if (!REQUEST_PARTS.has(loc[0]) || loc.length < 2) return undefined;
  const [first, ...rest] = loc.slice(1);
  const named = args.find((arg) => (arg.restName ?? snake(arg.name)) === first);
  if (named) return [named.name, ...memberPath(named.type, rest)];
  for (const arg of args) {
    const inner = getNullableType(arg.type);
    if (!isInputObjectType(inner)) continue;
    const field = Object.values(inner.getFields()).find((f) => restName(f) === first);
    if (field) return [arg.name, field.name, ...memberPath(field.type, rest)];
  }
  return undefined;
}

/** REST member names under an input type as its GraphQL field names; list indexes and anything unknown stay. */
function memberPath(type: GraphQLInputType, members: readonly (string | number)[]): (string | number)[] {
  const out: (string | number)[] = [];
  let at: GraphQLInputType | undefined = type;
  for (const member of members) {
    const inner: GraphQLInputType | undefined = at && getNullableType(at);
    if (inner && isListType(inner) && typeof member === 'number') {
      out.push(member);
      at = inner.ofType as GraphQLInputType;
      continue;
    }
    const field: GraphQLInputField | undefined =
      inner && isInputObjectType(inner) ? Object.values(inner.getFields()).find((f) => restName(f) === member) : undefined;
    out.push(field ? field.name : member);
    at = field?.type;
  }
  return out;
}

/**
 * A validation error thrown by a root field's resolver, each issue given its
 * path among the field's arguments (the policy layer calls this for every
 * root field, so every transport that executes the schema gets it). Any other
 * error is returned as it is.
 */
export function locateIssues(error: AppError, args: readonly FieldArgument[]): AppError {
  const issues = validationIssues(error);
  if (!issues?.some((issue) => issue.path === undefined)) return error;
  return withIssues(error, issues.map((issue) => (issue.path !== undefined ? issue : { ...issue, path: argumentPath(issue.loc, args) })));
}

/** A validation error found in the arguments themselves: each issue's loc is its path among them. */
export function atArguments(error: AppError): AppError {
  const issues = validationIssues(error);
  if (!issues) return error;
  return withIssues(error, issues.map((issue) => ({ ...issue, path: issue.loc })));
}

/**
 * GraphQL answers each issue at its path among the arguments. An issue no
 * root field located (or that matched no argument) keeps its member path
 * without the REST part: never a REST location like `["body", "role"]`.
 */
function graphqlIssues(error: AppError): { errors?: ValidationIssue[] } {
  const issues = validationIssues(error);
  if (!issues) return {};
  return {
    errors: issues.map(({ loc, msg, type, path }) => ({ loc: path ?? (REQUEST_PARTS.has(loc[0]) ? loc.slice(1) : loc), msg, type })),
  };
}

/** A resolver's validation error as REST answers it: each issue at the request location its service wrote. */
export function restIssues(error: AppError): AppError {
  const issues = validationIssues(error);
  if (!issues?.some((issue) => issue.path !== undefined)) return error;
  return withIssues(error, issues.map(({ loc, msg, type }) => ({ loc, msg, type })));
}

/** The same validation error with its issues replaced (the original kept as the cause). */
function withIssues(error: AppError, issues: ValidationIssue[]): AppError {
  return new AppError(error.code, error.message, { extra: { ...error.extra, errors: issues }, headers: error.headers, cause: error });
}
