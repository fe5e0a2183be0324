import { AppError } from '../../src/errors/catalog';

/**
 * Operations estimated to cost less than this run as they come: a profile,
 * health, a short list. Their work is small enough that any number of them
 * side by side never hold the event loop for long.
 */
export const UNSCHEDULED_COST = 100;

/** Heavier operations waiting their turn, at most; past that the server is busy (503). */
export const MAX_WAITING = 256;

/**
 * Keeps one process answering while it is flooded with the heaviest
 * operations it accepts. Node runs one operation's synchronous work at a time,
 * so a light request (a health check, a profile read) waits for whatever work
 * is queued ahead of it. The scheduler bounds that work:
 * - at most `capacity` units of estimated cost run at once (one operation at
 *   the cost cap, or several smaller ones); heavier operations wait in order,
 *   without holding the CPU, and past MAX_WAITING the server answers 503;
 * - the root fields of a scheduled operation run one after another, with a
 *   turn of the event loop between them, so what a light request can wait for
 *   is about one root field, not a whole operation.
 * Light operations (under UNSCHEDULED_COST) never wait and pay nothing.
 */
export class OperationScheduler {
  private inFlight = 0;
  private readonly waiting: { cost: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {}

  /**
   * A run for an operation of this estimated cost, or undefined for a light
   * one. Throws 503 server_busy when too many are waiting already.
   */
  schedule(cost: number): ScheduledRun | undefined {
    if (cost < UNSCHEDULED_COST) return undefined;
    const units = Math.min(cost, this.capacity);
    const release = () => {
      this.inFlight -= units;
      this.next();
    };
    if (this.waiting.length === 0 && this.inFlight + units <= this.capacity) {
      this.inFlight += units;
      return new ScheduledRun(undefined, release);
    }
    if (this.waiting.length >= MAX_WAITING) {
      throw new AppError('server_busy', 'The server is busy with heavy operations; retry shortly', { headers: { 'retry-after': '1' } });
    }
    const granted = new Promise<void>((grant) => this.waiting.push({ cost: units, grant }));
    return new ScheduledRun(granted, release);
  }

  /** Grants waiting operations in order while their cost fits, each after a turn, so requests read meanwhile go first. */
  private next(): void {
    while (this.waiting.length && this.inFlight + this.waiting[0]!.cost <= this.capacity) {
      const { cost, grant } = this.waiting.shift()!;
      this.inFlight += cost;
      void turn().then(grant);
    }
  }
}

/**
 * A turn of the event loop that surely passes its poll phase, where waiting
 * requests are read: one setImmediate queued from the poll phase runs in the
 * same iteration's check phase, before any new I/O; a second one cannot.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/**
 * One scheduled operation: its root fields run in turn once its cost is
 * granted, and the grant is given back once nothing of it has run for a turn
 * of the event loop. That needs no hook per transport: graphql-js starts every
 * root field of a query at once, and each next mutation as the previous ends,
 * so an operation idle across a turn is done (a field's nested work resolves
 * in microtasks, before the turn). Giving back early is harmless: it only lets
 * the next operation start sooner.
 */
export class ScheduledRun {
  /** Resolves when the operation may start; undefined when it could at once. */
  readonly granted: Promise<void> | undefined;
  private tail: Promise<void>;
  private running = 0;
  private started = false;
  private released = false;

  constructor(
    granted: Promise<void> | undefined,
    private readonly release: () => void,
  ) {
    this.granted = granted;
    this.tail = granted ?? Promise.resolve();
    // An operation that ends up running no field (refused by the validator) gives its grant back too.
    if (!granted) this.releaseWhenIdle();
    else void granted.then(() => this.releaseWhenIdle());
  }

  /** Runs a root field in its turn. */
  run<T>(field: () => T | Promise<T>): Promise<T> {
    this.running++;
    const first = !this.started;
    this.started = true;
    const result = (first ? this.tail : this.tail.then(turn)).then(field);
    this.tail = result.then(
      () => this.settled(),
      () => this.settled(),
    );
    return result;
  }

  private settled(): void {
    this.running--;
    this.releaseWhenIdle();
  }

  private releaseWhenIdle(): void {
    setImmediate(() => {
      if (this.running > 0 || this.released) return;
      this.released = true;
      this.release();
    });
  }
}
