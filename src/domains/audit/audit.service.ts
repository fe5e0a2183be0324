import type { FilterQuery } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { actorOf } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { AuditEvent, type ActorType } from './audit-event.entity';
import { currentEm } from '../../db/unit-of-work';
import type { Page } from '../../pagination';

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
   * Written in its own unit of work so an audit entry never drags along (or
   * waits on) unrelated pending changes of the caller. Published once stored.
   */
  async record(entry: AuditEntry): Promise<AuditEvent> {
    const em = this.orm.em.fork();
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
    await em.flush();
    this.bus.publish('audit.recorded', event);
    return event;
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
    // `actor` matches the actor's id (user or key id) or its label (email or key name at the time).
    if (options.actor) where.$or = [{ actorId: options.actor }, { actorLabel: options.actor }];
    const [items, total] = await currentEm(this.orm).findAndCount(AuditEvent, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: options.perPage,
      offset: (options.page - 1) * options.perPage,
    });
    return { items, page: options.page, perPage: options.perPage, total };
  }
}
