import { GraphQLError } from 'graphql';
import { AppError, errorEntry, isAppError, type ErrorCode } from '../src/errors/catalog';
import { toAppError } from '../src/errors/to-app-error';

/**
 * The GraphQL error shape, for every transport: the catalog code and the
 * HTTP status in extensions (`extensions.http`, headers included, as
 * GraphQL-over-HTTP servers read it). Unknown errors are logged and masked.
 */
export function toGraphQLError(error: GraphQLError, log: { error: (obj: object, msg: string) => void }): GraphQLError {
  const original = error.originalError;
  let appError: AppError;
  if (isAppError(original)) appError = original;
  else if (!original || original instanceof GraphQLError) {
    // graphql-js' own errors: the document or its variables do not fit the schema.
    appError = new AppError('bad_request', error.message);
  } else {
    // Transport errors (body parsing, size, media type) map like REST; anything else is masked.
    appError = toAppError(original);
    if (appError.status >= 500) log.error({ err: original }, 'unhandled resolver error');
  }
  return new GraphQLError(appError.message, {
    nodes: error.nodes,
    path: error.path,
    extensions: {
      code: appError.code,
      // The error's HTTP meaning travels with it, headers included (Retry-After).
      http: Object.keys(appError.headers).length ? { status: appError.status, headers: appError.headers } : { status: appError.status },
      ...appError.extra,
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
