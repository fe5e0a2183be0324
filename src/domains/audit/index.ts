import { defineDomain, type ApiOf } from '../../kernel/domain';
import { AuditEvent } from './audit-event.entity';
import { AuditService } from './audit.service';
import { auditMigrations } from './migrations';
import './events';

export { AuditEvent, type ActorType } from './audit-event.entity';
export { AuditService, type AuditEntry } from './audit.service';

/** The audit trail: every security-relevant action of a company, append-only, live on the bus. */
export const auditDomain = defineDomain({
  name: 'audit',
  requires: {},
  entities: [AuditEvent],
  migrations: auditMigrations,
  create: ({ kernel }) => ({ log: new AuditService(kernel.orm, kernel.events) }),
});

export type AuditApi = ApiOf<typeof auditDomain>;
