import { loadKernelConfig, type KernelConfig } from './kernel/config';
import { loadDomainConfig, type DomainConfig } from './domains';
import type { Env } from './env';

/**
 * Every setting Atrium reads, with its default: the kernel's and every
 * domain's, assembled from the domain list. The only place that reads
 * `process.env`. The README's configuration table is written from these
 * loaders; keep them in step.
 */
export type Config = KernelConfig & DomainConfig;

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  return { ...loadKernelConfig(env), ...loadDomainConfig(env), ...overrides };
}
