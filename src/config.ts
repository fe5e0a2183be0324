import { loadKernelConfig, type KernelConfig } from './kernel/config';
import { loadDomainConfig, type DomainConfig } from './domains';
import type { Env } from './env';
import { recordedPublicUrl } from './server-record';

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

/**
 * The settings of `atrium subgraph`: the server's, with `listen` moving only
 * where it listens. Without PUBLIC_URL of its own, it takes the one the
 * server recorded in DATA_DIR (src/server-record.ts): the token issuer and the
 * mailed links are the server's, even when the server was started with
 * another HOST, PORT or PUBLIC_URL than this process sees.
 */
export function loadSubgraphConfig(listen: Partial<Pick<Config, 'host' | 'port'>>, env: Env = process.env): Config {
  const config = loadConfig(env, listen);
  if (env.PUBLIC_URL) return config;
  const recorded = recordedPublicUrl(config.dataDir);
  return recorded ? loadConfig({ ...env, PUBLIC_URL: recorded }, listen) : config;
}
