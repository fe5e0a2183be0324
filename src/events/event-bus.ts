import { EventEmitter } from 'node:events';

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

  iterate<T extends Topic>(topic: T, filter: (payload: EventMap[T]) => boolean): AsyncIterableIterator<EventMap[T]> {
    return queueIterator<EventMap[T]>((push) => this.subscribe(topic, (payload) => filter(payload) && push(payload)));
  }
}

/**
 * An async iterator over values pushed by listeners that `attach` sets up
 * (it returns their detach). Written by hand rather than as an async
 * generator or with `events.on`: a generator parked on "next value" cannot
 * run `return()` until another value arrives (a listener leaked per closed
 * subscription), and `events.on` allocates a 2,048-slot queue and an abort
 * listener per iterator, which ten thousand dashboards feel. Here `return()`
 * detaches at once, and an idle subscriber costs a closure and an empty array.
 *
 * `end()` (the listener's second argument) ends the stream from the source's
 * side: nothing more is taken, the values queued are still read, and then the
 * iterator is done (a subscription then sends `complete`).
 */
export function queueIterator<T>(attach: (push: (value: T) => void, end: () => void) => () => void): AsyncIterableIterator<T> {
  const queue: T[] = [];
  let waiting: ((result: IteratorResult<T>) => void) | null = null;
  let done = false;
  let ending = false;
  let detach: (() => void) | null = null;
  const finish = (): IteratorResult<T> => {
    if (!done) {
      done = true;
      detach?.();
      queue.length = 0;
      waiting?.({ done: true, value: undefined });
      waiting = null;
    }
    return { done: true, value: undefined };
  };
  detach = attach(
    (value) => {
      if (done || ending) return;
      if (waiting) {
        const resolve = waiting;
        waiting = null;
        resolve({ done: false, value });
      } else queue.push(value);
    },
    () => {
      if (done || ending) return;
      ending = true;
      // Ended while attaching: the detach is not known yet, and is called below.
      if (!queue.length) finish();
    },
  );
  // The source ended before attach returned: finish() could not detach it then.
  if (done) detach();
  const iterator: AsyncIterableIterator<T> = {
    next() {
      if (queue.length) {
        const value = queue.shift()!;
        // The last value of an ended stream: the source lets go now, not at the next read.
        if (ending && !queue.length) finish();
        return Promise.resolve({ done: false, value });
      }
      if (done) return Promise.resolve({ done: true, value: undefined });
      return new Promise((resolve) => (waiting = resolve));
    },
    return() {
      return Promise.resolve(finish());
    },
    throw(error?: unknown) {
      finish();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
