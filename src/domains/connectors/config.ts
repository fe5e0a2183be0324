/**
 * Settings of the cloud-storage connectors (CONNECTOR_*): the providers' token
 * endpoints that `POST /admin/connectors/{name}/test` checks, and the
 * test-only switch that lets that check reach loopback over plain http (the
 * kernel's SSRF_ALLOW_LOOPBACK, read through the same helper).
 */
export interface ConnectorsConfig {
  /** Token endpoint of google_drive (CONNECTOR_GOOGLE_TOKEN_URL). */
  googleTokenUrl: string;
  /** Token endpoint template of onedrive; `{tenant}` is replaced (CONNECTOR_MICROSOFT_TOKEN_URL). */
  microsoftTokenUrl: string;
  /** Test-only: allow http and loopback addresses in connector checks (SSRF_ALLOW_LOOPBACK, formerly CONNECTOR_ALLOW_LOOPBACK). */
  allowLoopback: boolean;
  /** Time limit of one endpoint check in milliseconds (5000; lowered only by tests). */
  testTimeoutMs: number;
}

import { ConfigError, type Env } from '../../env';
import { ssrfAllowLoopback } from '../../kernel/config';

export const DEFAULT_GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const DEFAULT_MICROSOFT_TOKEN_URL = 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token';

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim() || fallback;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw.replace('{tenant}', 'common'));
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) {
    throw new ConfigError(`${name} must be an https URL, got "${raw}"`);
  }
  return raw;
}

export function loadConnectorsConfig(env: Env): ConnectorsConfig {
  return {
    googleTokenUrl: url(env, 'CONNECTOR_GOOGLE_TOKEN_URL', DEFAULT_GOOGLE_TOKEN_URL),
    microsoftTokenUrl: url(env, 'CONNECTOR_MICROSOFT_TOKEN_URL', DEFAULT_MICROSOFT_TOKEN_URL),
    allowLoopback: ssrfAllowLoopback(env),
    testTimeoutMs: 5000,
  };
}
