/**
 * Single sign-on settings (assembled by ./config.ts). Two providers: `google`
 * (consumer accounts) and `microsoft` (workplace accounts, multi-tenant).
 */
export const ssoProviderNames = ['google', 'microsoft'] as const;
export type SsoProviderName = (typeof ssoProviderNames)[number];

export interface SsoProviderConfig {
  /**
   * The issuer identifier, or the URL of its discovery document (any URL
   * containing `/.well-known/`). https, except a loopback host (tests).
   */
  issuer: string;
  /** Both set: the provider is configured; either missing: its endpoints answer `sso_provider_not_configured`. */
  clientId?: string;
  clientSecret?: string;
}

export interface SsoConfig {
  google: SsoProviderConfig;
  microsoft: SsoProviderConfig;
  /** Exact values accepted as `redirect_uri` on `GET /auth/{provider}/start`; empty: none. */
  redirectAllowlist: string[];
}

export const defaultSsoIssuers: Record<SsoProviderName, string> = {
  google: 'https://accounts.google.com',
  // The multi-tenant authority: any work or school tenant (and personal accounts).
  microsoft: 'https://login.microsoftonline.com/common/v2.0',
};

/** localhost, 127.0.0.0/8 and ::1: the only hosts an OIDC issuer may be reached over plain http. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/** Throws unless `value` is an https URL, or an http URL on a loopback host. */
export function checkIssuerUrl(name: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${value}"`);
  }
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return;
  throw new ConfigError(`${name} must be an https URL (plain http only on a loopback host), got "${value}"`);
}

import { ConfigError, type Env } from '../../env';

function provider(env: Env, name: SsoProviderName): SsoProviderConfig {
  const prefix = `SSO_${name.toUpperCase()}_`;
  const issuer = env[`${prefix}ISSUER`]?.trim() || defaultSsoIssuers[name];
  checkIssuerUrl(`${prefix}ISSUER`, issuer);
  return {
    issuer,
    clientId: env[`${prefix}CLIENT_ID`]?.trim() || undefined,
    clientSecret: env[`${prefix}CLIENT_SECRET`] || undefined,
  };
}

/** Allow-list entries: absolute http(s) URLs or absolute paths; compared exactly, never by prefix. */
function allowlist(env: Env): string[] {
  const entries = (env.SSO_REDIRECT_ALLOWLIST ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const isPath = entry.startsWith('/') && !entry.startsWith('//');
    let isUrl = false;
    try {
      isUrl = ['http:', 'https:'].includes(new URL(entry).protocol);
    } catch {
      isUrl = false;
    }
    if (!isPath && !isUrl) {
      throw new ConfigError(`SSO_REDIRECT_ALLOWLIST entries must be http(s) URLs or absolute paths, got "${entry}"`);
    }
  }
  return entries;
}

export function loadSsoConfig(env: Env): SsoConfig {
  return { google: provider(env, 'google'), microsoft: provider(env, 'microsoft'), redirectAllowlist: allowlist(env) };
}
