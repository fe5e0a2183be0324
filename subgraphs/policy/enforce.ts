import { MapperKind, mapSchema, type FieldMapper } from '@graphql-tools/utils';
import { Kind, type GraphQLFieldResolver, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';
import { AppError, isAppError } from '../../src/errors/catalog';
import { atArguments, locateIssues, type FieldArgument } from '../errors';
import { textRefusal } from '../../src/errors/refused-text';
import { isPromise } from '../../src/is-promise';
import { moduleKeyOutsideModules } from '../../src/auth/policy';
import type { GraphQLContext } from '../context';
import { fieldPolicy, type FieldPolicy } from './access';
import { compileBounds, type ArgumentBounds } from './bounds';
import { restArgHints, restArgNames } from '../rest';

/**
 * The schema half of the policy layer, applied to every subgraph's schema
 * when it is built, so every transport that executes it (mercurius over HTTP
 * and WebSocket, the REST adapter, a standalone subgraph) runs the same
 * checks. A root field without a declared policy stops the build.
 *
 * - `auth: 'authenticated'`: an anonymous caller is refused before the
 *   resolver runs, with the reason its credential was refused (expired,
 *   revoked, IP not allowed, MFA enrolment owed) or 401 unauthenticated.
 * - Text holding U+0000 or a lone surrogate anywhere in the arguments (nested
 *   inputs and lists included) is refused with 422 validation_error before the
 *   resolver runs, each issue at its argument path (src/errors/refused-text.ts); so are
 *   values outside the bounds their fields declare (./bounds.ts), which
 *   REST's JSON schemas enforce too. An id declared a UUID reaches the
 *   resolver lower-case, as ids are stored, whatever case it came in.
 * - A validation error the resolver throws gets, for each issue, its path
 *   among the field's arguments (../errors.ts): GraphQL answers that, REST
 *   the request location the service wrote.
 * - A heavier operation's root fields take turns (./scheduler.ts).
 * Measuring and admitting an operation (caps, budgets, introspection, MFA
 * enrolment) happens before execution, in each transport's own hook
 * (./gate.ts): an operation of introspection fields alone reaches no
 * resolver here.
 */
export function enforceFieldPolicies(schema: GraphQLSchema, subgraph: string): GraphQLSchema {
  const guard =
    (kind: 'resolve' | 'subscribe'): FieldMapper =>
    (field, fieldName, typeName) => {
      const policy = fieldPolicy(field);
      if (!policy) throw new Error(`${subgraph}: ${typeName}.${fieldName} declares no access policy (@Access)`);
      const unknown = restArgNames(field).filter((name) => !field.args?.[name]);
      if (unknown.length) throw new Error(`${subgraph}: ${typeName}.${fieldName} has no argument ${unknown.join(', ')} to hint (@RestArgs)`);
      const inner = field[kind];
      if (!inner) return field;
      const args = Object.entries(field.args ?? {}).map(([name, arg]): FieldArgument => {
        const restName = restArgHints(field, name)?.name;
        return restName === undefined ? { name, type: arg.type } : { name, type: arg.type, restName };
      });
      const bounds = compileBounds(args.map((arg) => ({ ...arg, hints: restArgHints(field, arg.name) })));
      return { ...field, [kind]: guarded(inner as GraphQLFieldResolver<unknown, GraphQLContext>, policy, args, bounds) };
    };
  return mapSchema(schema, {
    [MapperKind.QUERY_ROOT_FIELD]: guard('resolve'),
    [MapperKind.MUTATION_ROOT_FIELD]: guard('resolve'),
    [MapperKind.SUBSCRIPTION_ROOT_FIELD]: guard('subscribe'),
  });
}

/** Whether the operation is this one root field, as every REST route and most clients send it. */
function soleRootField(info: GraphQLResolveInfo): boolean {
  const selections = info.operation.selectionSet.selections;
  return selections.length === 1 && selections[0]!.kind === Kind.FIELD;
}

/**
 * The context of one root field of an operation that has several. Services
 * derive their idempotency keys from the request id or the Idempotency-Key
 * (a credit grant's ledger entry, a chat's hold, a top-up's checkout): each
 * field gets its own, by its response key, so two grants aliased in one
 * request are two grants, and a retry of the same request still replays
 * each. An operation of one field keeps the keys as they are.
 */
function scopedToField(ctx: GraphQLContext, responseKey: string): GraphQLContext {
  const { meta } = ctx;
  return {
    ...ctx,
    meta: {
      ...meta,
      requestId: `${meta.requestId}/${responseKey}`,
      ...(meta.idempotencyKey ? { idempotencyKey: `${meta.idempotencyKey}/${responseKey}` } : {}),
    },
  };
}

/** A root field's resolver behind its policy (also `_entities` of a standalone subgraph, which has no decorator to declare it). */
export function guarded(
  inner: GraphQLFieldResolver<unknown, GraphQLContext>,
  policy: FieldPolicy,
  fieldArgs: readonly FieldArgument[],
  bounds?: ArgumentBounds,
): GraphQLFieldResolver<unknown, GraphQLContext> {
  const located = (error: unknown): never => {
    throw isAppError(error) ? locateIssues(error, fieldArgs) : error;
  };
  const resolve: GraphQLFieldResolver<unknown, GraphQLContext> = (source, args, ctx, info) => {
    const kind = ctx.principal.kind;
    if (kind === 'anonymous' && policy.auth !== 'public') {
      throw ctx.principal.credentialError ?? new AppError('unauthenticated', 'A Bearer credential is required');
    }
    if (kind === 'module_key' && policy.auth === 'authenticated') throw moduleKeyOutsideModules();
    // Found by walking the arguments: each issue's loc is already its path among them.
    const refused = textRefusal(args) ?? bounds?.refuse(args);
    if (refused) throw atArguments(refused);
    const values = bounds ? bounds.canonical(args) : args;
    const fieldCtx = soleRootField(info) ? ctx : scopedToField(ctx, info.path.key as string);
    return ctx.run ? ctx.run.run(() => inner(source, values, fieldCtx, info)) : inner(source, values, fieldCtx, info);
  };
  // A synchronous answer stays synchronous: only a promise gets a rejection handler.
  return (source, args, ctx, info) => {
    let result: unknown;
    try {
      result = resolve(source, args, ctx, info);
    } catch (error) {
      return located(error);
    }
    return isPromise(result) ? result.then(undefined, located) : result;
  };
}
