/** The browser session cookie set by single sign-on (opaque; its SHA-256 is on the session row). */
export const SESSION_COOKIE = 'service_token';
/** Binds a single sign-on attempt to the browser that started it (holds the `state`, 300 s). */
export const SSO_STATE_COOKIE = 'atrium_sso_state';
/**
 * Binds a single sign-on MFA challenge to the browser the provider sent back
 * (holds the challenge, 300 s; sent only to `/auth/sso/mfa`).
 */
export const SSO_MFA_COOKIE = 'atrium_sso_mfa';

/** The value of cookie `name` in a Cookie header, or undefined (an empty value counts as absent). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (!value) return undefined;
    try {
      return decodeURIComponent(value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  path?: string;
  secure: boolean;
}

/** `name=value; Path; Max-Age; HttpOnly; SameSite=Lax[; Secure]`: every cookie Atrium sets is httpOnly and Lax. */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${options.path ?? '/'}`,
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearCookie(name: string, options: { path?: string; secure: boolean }): string {
  return `${name}=; Path=${options.path ?? '/'}; Max-Age=0; HttpOnly; SameSite=Lax${options.secure ? '; Secure' : ''}`;
}
