import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { AppError } from '../errors/catalog';
import type { Role } from './principal';

export interface AccessClaims {
  sub: string;
  cid: string;
  role: Role;
  sid: string;
  iat: number;
  exp: number;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** 32 random bytes, base64url: the refresh token format of the spec. */
export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

export const COMPANY_KEY_PREFIX = 'svc_';

/** A company API key: `svc_` + 32 random bytes (base64url). */
export function newCompanyApiKey(): string {
  return COMPANY_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export const MODULE_KEY_PREFIX = 'sk_live_svc_';

/** A user's AI-modules key: `sk_live_svc_` + 32 random bytes (base64url). */
export function newModuleKey(): string {
  return MODULE_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * HS256 access tokens. Verified tokens are remembered until they expire, so
 * the hot path does one Map lookup instead of an HMAC; the session check that
 * follows still runs on every request.
 */
export class AccessTokens {
  private readonly key: Uint8Array;
  private readonly verified = new Map<string, AccessClaims>();
  private static readonly MAX_CACHED = 10_000;

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
    private readonly issuer: string,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  /** `authTime` (epoch seconds) becomes the `auth_time` claim: when the session last proved who the user is. */
  async sign(claims: Omit<AccessClaims, 'iat' | 'exp'> & { authTime?: number }): Promise<string> {
    const authTime = claims.authTime === undefined ? {} : { auth_time: claims.authTime };
    return new SignJWT({ cid: claims.cid, role: claims.role, sid: claims.sid, ...authTime })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuer(this.issuer)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }

  /** The claims of a token verified before and not yet expired; undefined otherwise (verify() decides). */
  cachedClaims(token: string, nowMs: number): AccessClaims | undefined {
    const cached = this.verified.get(token);
    return cached && cached.exp > nowMs / 1000 ? cached : undefined;
  }

  async verify(token: string): Promise<AccessClaims> {
    const now = Math.floor(Date.now() / 1000);
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.exp > now) return cached;
      this.verified.delete(token);
      throw new AppError('token_expired', 'The access token has expired');
    }
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: this.issuer }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new AppError('token_expired', 'The access token has expired');
      throw new AppError('token_invalid', 'The access token is invalid');
    }
    const { sub, cid, role, sid, iat, exp } = payload as Partial<AccessClaims>;
    if (typeof sub !== 'string' || typeof cid !== 'string' || typeof sid !== 'string' || typeof exp !== 'number') {
      throw new AppError('token_invalid', 'The access token is missing claims');
    }
    const claims: AccessClaims = { sub, cid, role: role as Role, sid, iat: iat ?? now, exp };
    if (this.verified.size >= AccessTokens.MAX_CACHED) this.verified.clear();
    this.verified.set(token, claims);
    return claims;
  }
}
