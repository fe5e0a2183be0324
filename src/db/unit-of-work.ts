import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from './orm';

interface Scope {
  orm: Orm;
  em?: EntityManager;
}

const scopes = new AsyncLocalStorage<Scope>();

/**
 * Runs `fn` as one unit of work: every service call inside shares one
 * EntityManager fork, created on first use so requests that never touch the
 * ORM (cached credentials, read-store reads) do not pay for it.
 */
export function runInUnitOfWork<T>(orm: Orm, fn: () => T): T {
  return scopes.run({ orm }, fn);
}

/**
 * The unit of work of the current request, WebSocket operation or job; a
 * fresh fork where there is none. Take it once per service method.
 */
export function currentEm(orm: Orm): EntityManager {
  const scope = scopes.getStore();
  if (scope && scope.orm === orm) return (scope.em ??= orm.em.fork());
  return orm.em.fork();
}
