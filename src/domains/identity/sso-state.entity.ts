import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** What a single sign-on attempt is for: signing in, or re-authenticating a session (step-up). */
export const ssoIntents = ['login', 'step_up'] as const;
export type SsoIntent = (typeof ssoIntents)[number];

/**
 * One single sign-on attempt between `GET /auth/{provider}/start` and its
 * callback. Only the SHA-256 of the `state` (the CSRF nonce) is kept; the row
 * lives 300 seconds and is spent by one conditional UPDATE of `usedAt`, so a
 * state works once. The nonce and PKCE verifier are useless without the
 * authorization code, which never reaches the database. A step-up attempt
 * (`intent = 'step_up'`) also names the session it was started from.
 */
@Entity({ tableName: 'sso_states' })
@Index({ properties: ['expiresAt'] })
export class SsoState {
  [OptionalProps]?: 'id' | 'createdAt' | 'usedAt' | 'redirectUri' | 'intent' | 'sessionId';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 64, unique: true })
  stateHash!: string;

  @Property({ type: 'string', length: 32 })
  provider!: string;

  @Property({ type: 'string', length: 128 })
  nonce!: string;

  @Property({ type: 'string', length: 128 })
  codeVerifier!: string;

  /** Where to send the browser after success (an allow-listed value), or null for /app. */
  @Property({ type: 'string', length: 2048, nullable: true })
  redirectUri: string | null = null;

  @Property({ type: 'string', length: 16, default: 'login' })
  intent: SsoIntent = 'login';

  /** For `step_up`: the session (of the signed-in caller at start) to record the fresh authentication on. */
  @Property({ type: 'uuid', nullable: true })
  sessionId: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  usedAt: Date | null = null;
}
