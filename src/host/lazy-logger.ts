import type { FastifyBaseLogger } from 'fastify';
import type { FastifyChildLoggerFactory } from 'fastify/types/logger';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/**
 * `request.log` that builds its pino child (bound to the request id) on first
 * use. Most requests never log a line, and a pino child, which serializes its
 * bindings up front, cost about 2% of a request's CPU in bench/.
 */
class LazyRequestLogger {
  private built?: FastifyBaseLogger;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.built ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.built?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: Parameters<FastifyBaseLogger['fatal']>): void {
    this.logger.fatal(...args);
  }

  error(...args: Parameters<FastifyBaseLogger['error']>): void {
    this.logger.error(...args);
  }

  warn(...args: Parameters<FastifyBaseLogger['warn']>): void {
    this.logger.warn(...args);
  }

  info(...args: Parameters<FastifyBaseLogger['info']>): void {
    this.logger.info(...args);
  }

  debug(...args: Parameters<FastifyBaseLogger['debug']>): void {
    this.logger.debug(...args);
  }

  trace(...args: Parameters<FastifyBaseLogger['trace']>): void {
    this.logger.trace(...args);
  }

  silent(...args: Parameters<FastifyBaseLogger['silent']>): void {
    this.logger.silent(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** A child of `parent` bound to `bindings`, built on its first line. */
export const lazyChild = (parent: FastifyBaseLogger, bindings: Bindings, options?: ChildOptions): FastifyBaseLogger =>
  new LazyRequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;

export const lazyChildLogger: FastifyChildLoggerFactory = (logger, bindings, options) => lazyChild(logger, bindings, options);
