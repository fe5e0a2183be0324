import type { AuditEvent } from './audit-event.entity';

export {};

declare module '../../events/event-bus' {
  interface EventMap {
    /** An audit entry was stored; feeds the `auditEvents` subscription. */
    'audit.recorded': AuditEvent;
  }
}
