import type { FilterQuery } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { actorOf } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { AuditEvent, type ActorType } from './audit-event.entity';
import { afterCommit, currentEm, withUnitOfWork } from '../../db/unit-of-work';
import type { Page } from '../../pagination';
import { UUID_PATTERN } from '../../ids';

export interface AuditEntry {
  action: string;
  companyId: string | null;
  /** Either the calling principal or an explicit actor. */
  principal?: Principal;
  actor?: { actorType: ActorType; actorId: string | null; actorLabel: string | null };
  meta?: Partial<RequestMeta>;
  targetType?: string;
  targetId?: string;
  data?: Record<string, unknown>;
}

export class AuditService {
  constructor(
    private readonly orm: Orm,
    private readonly bus: EventBus,
  ) {}

  /**
   * Records an entry in the caller's unit of work and flushes it: the entry
   * commits with the change it describes (inside `transaction()`, with that
   * transaction; otherwise with the unit of work's pending changes), so an
   * audited change never loses its entry. Published on the bus once it has
   * committed, never for work that rolled back.
   */
  async record(entry: AuditEntry): Promise<AuditEvent> {
    return withUnitOfWork(this.orm, async () => {
      const em = currentEm(this.orm);
      const actor = entry.actor ?? actorOf(entry.principal ?? { kind: 'anonymous' });
      const event = em.create(AuditEvent, {
        action: entry.action,
        companyId: entry.companyId,
        ...actor,
        targetType: entry.targetType ?? null,
        targetId: entry.targetId ?? null,
        ip: entry.meta?.ip ?? null,
        requestId: entry.meta?.requestId ?? null,
        data: entry.data ?? null,
      });
      // Registered before the flush: it runs at this flush's commit, or at the enclosing transaction's.
      afterCommit(em, () => this.bus.publish('audit.recorded', event));
      await em.flush();
      return event;
    });
  }

  /** The company's audit entries as they are recorded, live (the `auditEvents` subscription). */
  follow(companyId: string): AsyncIterableIterator<AuditEvent> {
    return this.bus.iterate('audit.recorded', (event) => event.companyId === companyId);
  }

  /** The company's audit log, newest first. */
  async list(
    companyId: string,
    options: { page: number; perPage: number; action?: string; actor?: string },
  ): Promise<Page<AuditEvent>> {
    const where: FilterQuery<AuditEvent> = { companyId, ...(options.action ? { action: options.action } : {}) };
    // `actor` matches the actor's id (user or key id, a UUID: any case) or its label (email or key name at the time).
    if (options.actor) {
      const id = UUID_PATTERN.test(options.actor) ? options.actor.toLowerCase() : options.actor;
      where.$or = [{ actorId: id }, { actorLabel: options.actor }];
    }
    const [items, total] = await currentEm(this.orm).findAndCount(AuditEvent, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: options.perPage,
      offset: (options.page - 1) * options.perPage,
    });
    return { items, page: options.page, perPage: options.perPage, total };
  }
}
