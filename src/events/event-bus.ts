import { EventEmitter, on } from 'node:events';

/**
 * Every event the domains publish, by topic. Empty here: each domain adds its
 * own topics from its `events.ts` by declaration merging
 * (`declare module '../../events/event-bus' { interface EventMap { … } }`),
 * so the kernel names no domain and the map is still one typed whole.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventMap {}

export type Topic = keyof EventMap;

/**
 * The port behind subscriptions, caches and the audit feed. Delivery is to
 * this process's listeners; a Redis-backed adapter with the same shape is the
 * scale-out path (listeners on every node then see every node's events).
 */
export interface EventBus {
  publish<T extends Topic>(topic: T, payload: EventMap[T]): void;
  subscribe<T extends Topic>(topic: T, listener: (payload: EventMap[T]) => void): () => void;
  /** A filtered async iterator of one topic; `return()` detaches at once. */
  iterate<T extends Topic>(topic: T, filter: (payload: EventMap[T]) => boolean): AsyncIterableIterator<EventMap[T]>;
}

/** The single-node adapter: an in-process EventEmitter. */
export class MemoryEventBus implements EventBus {
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
   * Written by hand rather than as an async generator: a generator parked on
   * "next event" cannot run `return()` until another event arrives, which
   * would leak a listener per closed subscription. Here `return()` detaches
   * at once.
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
