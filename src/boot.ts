import type { Config } from './config';
import { runInUnitOfWork } from './db/unit-of-work';
import { domains as allDomains, type DomainApis } from './domains';
import { bootOrder, type AnyDomain } from './kernel/domain';
import { createKernel, type Kernel } from './kernel/kernel';
import type { Orm } from './db/orm';

/** A booted process: the kernel and the public API of every booted domain. */
export interface Atrium {
  config: Config;
  kernel: Kernel;
  /** The booted domains' APIs; a process that booted only some domains has only those. */
  domains: DomainApis;
  close(): Promise<void>;
}

export interface BootOptions {
  /**
   * The domains this process serves (`atrium subgraph <name>` boots its
   * subgraph's); each comes with the domains it requires. Default: all.
   */
  domains?: readonly AnyDomain[];
  /** Run the job worker with every handler and schedule (a serving process does; CLI commands never do). */
  background?: boolean;
}

/**
 * The composition root: the kernel, then each domain after the domains it
 * requires, each given exactly their APIs. Migrations are always every
 * domain's (the database is one schema); entities only the booted domains'.
 */
export async function boot(config: Config, options: BootOptions = {}): Promise<Atrium> {
  const selected = bootOrder(options.domains ?? allDomains);
  const kernel = await createKernel(config, {
    entities: selected.flatMap((domain) => domain.entities),
    migrations: allDomains.flatMap((domain) => domain.migrations),
  });
  const apis: Record<string, unknown> = {};
  try {
    for (const domain of selected) {
      const deps = Object.fromEntries(Object.keys(domain.requires).map((name) => [name, apis[name]]));
      apis[domain.name] = domain.create({ kernel, config, deps });
    }
    await runInUnitOfWork(kernel.orm, async () => {
      for (const domain of selected) await domain.seed?.(apis[domain.name]);
    });
  } catch (error) {
    await kernel.close();
    throw error;
  }
  if (options.background) {
    try {
      await startJobs(kernel, selected, apis);
    } catch (error) {
      await kernel.close();
      throw error;
    }
  }
  return {
    config,
    kernel,
    domains: apis as DomainApis,
    async close() {
      await kernel.close();
    },
  };
}

/** Registers the booted domains' job handlers and schedules, and starts the worker. */
async function startJobs(kernel: Kernel, selected: readonly AnyDomain[], apis: Record<string, unknown>): Promise<void> {
  for (const domain of selected) {
    for (const [kind, handler] of Object.entries(domain.jobs?.(apis[domain.name]) ?? {})) kernel.worker.register(kind, handler);
  }
  const schedules = [...kernel.schedules, ...selected.flatMap((domain) => domain.schedules?.(apis[domain.name]) ?? [])];
  for (const { kind, everySeconds } of schedules) await kernel.worker.schedule(kind, everySeconds);
  await kernel.worker.start();
}

/** Runs `fn` in its own unit of work (outside an HTTP request: CLI, start-up, tests). */
export function inContext<T>(orm: Orm, fn: () => T | Promise<T>): Promise<T> {
  return runInUnitOfWork(orm, async () => fn());
}
