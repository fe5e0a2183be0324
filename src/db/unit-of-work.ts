import { RequestContext } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from './orm';

/**
 * The unit of work for the current request, WebSocket operation or job; a
 * fresh one where there is none. Take it once per service method.
 */
export function currentEm(orm: Orm): EntityManager {
  return (RequestContext.getEntityManager() as EntityManager | undefined) ?? orm.em.fork();
}
