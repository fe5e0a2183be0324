import { EventEmitter, on } from 'node:events';
import type { AuditEvent } from '../domains/audit/audit-event.entity';

/** Every event the core publishes, by topic. */
export interface EventMap {
  'audit.recorded': AuditEvent;
  'session.revoked': { sessionId: string; userId: string };
  /**
   * A user changed. `access` says whether what they may do or who they are
   * changed (role, status, email, password, deletion): open sockets of theirs
   * end. A rename is not an access change.
   */
  'user.changed': { userId: string; access: boolean };
  'api_key.revoked': { keyId: string; keyHash: string };
  /** A company's security policy changed; policy caches drop the company. */
  'security_policy.changed': { companyId: string; version: number };
}

export type Topic = keyof EventMap;

/**
 * The in-process event bus behind subscriptions, caches and the audit feed.
 * One node needs nothing more; a Redis-backed bus with the same shape is the
 * scale-out path.
 */
export class EventBus {
  private readonly emitter = new EventEmitter({ captureRejections: false });

  constructor() {
    // Every subscription adds a listener; many dashboards are normal.
    this.emitter.setMaxListeners(0);
  }

  publish<T extends Topic>(topic: T, payload: EventMap[T]): void {
    this.emitter.emit(topic, payload);
  }

  subscribe<T extends Topic>(topic: T, listener: (payload: EventMap[T]) => void): () => void {
    this.emitter.on(topic, listener);
    return () => this.emitter.off(topic, listener);
  }

  /**
   * A filtered async iterator of one topic. Written by hand rather than as an
   * async generator: a generator parked on "next event" cannot run `return()`
   * until another event arrives, which would leak a listener per closed
   * subscription. Here `return()` detaches at once.
   */
  iterate<T extends Topic>(topic: T, filter: (payload: EventMap[T]) => boolean): AsyncIterableIterator<EventMap[T]> {
    const inner = on(this.emitter, topic) as AsyncIterableIterator<[EventMap[T]]>;
    const iterator: AsyncIterableIterator<EventMap[T]> = {
      async next() {
        for (;;) {
          const result = await inner.next();
          if (result.done) return { done: true, value: undefined };
          const [payload] = result.value;
          if (filter(payload)) return { done: false, value: payload };
        }
      },
      async return() {
        await inner.return?.();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}
