import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventSubscriber, Transaction, TransactionEventArgs } from '@mikro-orm/core';
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

/** Runs `fn` in the caller's unit of work, or in one of its own when there is none (a CLI command, a test). */
export function withUnitOfWork<T>(orm: Orm, fn: () => T): T {
  return inUnitOfWork(orm) ? fn() : runInUnitOfWork(orm, fn);
}

/** Whether the caller runs inside a unit of work of `orm` (runInUnitOfWork, a request, a job). */
export function inUnitOfWork(orm: Orm): boolean {
  return scopes.getStore()?.orm === orm;
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

/**
 * The current unit of work's EntityManager while it is in a transaction,
 * else undefined; forks nothing (a fork costs more than a ledger write's
 * statements, and most callers that ask are not in one).
 */
export function openTransaction(orm: Orm): EntityManager | undefined {
  const scope = scopes.getStore();
  const em = scope && scope.orm === orm ? scope.em : undefined;
  return em?.isInTransaction() ? em : undefined;
}

/**
 * Runs `fn` in one database transaction of the current unit of work: inside
 * `fn`, `currentEm(orm)` is the transaction's EntityManager (also passed as
 * `em`), so whatever a service persists or flushes there, jobs enqueued
 * included, commits or rolls back together. Changes still pending in the
 * unit of work are flushed first, on their own: a transaction starts from a
 * clean unit of work. (MikroORM's transaction fork would write the pending
 * changes of loaded entities in the transaction, and after a rollback the
 * unit of work would take them for stored: they would be lost.) Nesting
 * makes a savepoint.
 *
 * SQLite has one connection: inside `fn`, never await a query of another
 * EntityManager (`orm.em.fork()`), nor anything slow (network): every other
 * query of the process waits for the commit.
 */
export async function transaction<T>(orm: Orm, fn: (em: EntityManager) => Promise<T>): Promise<T> {
  const outer = currentEm(orm);
  await outer.flush();
  const nested = outer.isInTransaction();
  let inner: EntityManager | undefined;
  const result = await outer.transactional((tx) => {
    inner = tx;
    return scopes.run({ orm, em: tx }, () => fn(tx));
  });
  // A savepoint's release is no commit: its hooks wait for the enclosing one.
  if (nested && inner) hooksOf(outer).push(...take(inner));
  return result;
}

type Hook = { when: 'before'; fn: (tx: Transaction) => Promise<void> } | { when: 'after'; fn: () => void };

/** Hooks per EntityManager; an em that never commits takes its hooks with it. */
const hooks = new WeakMap<EntityManager, Hook[]>();

function hooksOf(em: EntityManager): Hook[] {
  let list = hooks.get(em);
  if (!list) hooks.set(em, (list = []));
  return list;
}

function take(em: EntityManager): Hook[] {
  const list = hooks.get(em) ?? [];
  hooks.delete(em);
  return list;
}

/**
 * Runs `fn` once the next transaction of `em` commits: its next flush, or
 * the `transaction()` / `em.transactional()` it belongs to. Dropped if that
 * transaction rolls back. For side effects that must not happen for work
 * that did not commit (waking a worker, publishing an event). `fn` runs
 * after the commit: an error it throws cannot undo it, so it is reported as
 * a process warning and not thrown.
 */
export function afterCommit(em: EntityManager, fn: () => void): void {
  hooksOf(em).push({ when: 'after', fn });
}

/**
 * Runs `fn` once the writes made so far in the current unit of work have
 * committed: when the enclosing `transaction()` commits (never if it rolls
 * back), or at once when none is open (a native write has committed
 * already). For events that announce a change (`session.revoked`).
 */
export function whenCommitted(orm: Orm, fn: () => void): void {
  const em = currentEm(orm);
  if (em.isInTransaction()) afterCommit(em, fn);
  else fn();
}

/**
 * Runs `fn` inside the next transaction of `em`, after its writes and just
 * before COMMIT; `fn` gets the open transaction to run statements in. An
 * error rolls the transaction back. For a last check or fix-up that must
 * commit atomically with the work (see the job queue's dedupe keys).
 */
export function beforeCommit(em: EntityManager, fn: (tx: Transaction) => Promise<void>): void {
  hooksOf(em).push({ when: 'before', fn });
}

/**
 * Runs the hooks of `afterCommit` and `beforeCommit`; registered once in the
 * ORM options (src/db/orm.ts). MikroORM reports a root transaction's events
 * with the EntityManager that ran it: the flushing em for an implicit flush,
 * the transaction's fork for `em.transactional()`.
 */
export class CommitHooks implements EventSubscriber {
  async beforeTransactionCommit(args: TransactionEventArgs): Promise<void> {
    const list = hooks.get(args.em as EntityManager);
    if (!list || !args.transaction) return;
    // A hook may register further hooks (for the next commit): run only those present now.
    const before = list.filter((hook) => hook.when === 'before');
    hooks.set(args.em as EntityManager, list.filter((hook) => hook.when === 'after'));
    for (const hook of before) await (hook.fn as (tx: Transaction) => Promise<void>)(args.transaction);
  }

  afterTransactionCommit(args: TransactionEventArgs): void {
    const list = hooks.get(args.em as EntityManager);
    if (!list) return;
    hooks.set(args.em as EntityManager, list.filter((hook) => hook.when === 'before'));
    for (const hook of list) {
      if (hook.when !== 'after') continue;
      try {
        hook.fn();
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
  }

  afterTransactionRollback(args: TransactionEventArgs): void {
    hooks.delete(args.em as EntityManager);
  }
}
