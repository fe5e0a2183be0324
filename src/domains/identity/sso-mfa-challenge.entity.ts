import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { SsoIntent } from './sso-state.entity';
import { User } from './user.entity';

/**
 * The second step of a single sign-on for a user with MFA on: the provider
 * proved who the user is, and the TOTP (or recovery) code is still owed.
 * Created by the callback instead of a session; answered once with
 * `POST /auth/sso/mfa`. Only the SHA-256 of the challenge is kept; it lives
 * 300 seconds, is bound to the browser by a cookie, and is spent by one
 * conditional UPDATE of `usedAt` (a wrong code gives it back, up to 5 times).
 */
@Entity({ tableName: 'sso_mfa_challenges' })
@Index({ properties: ['expiresAt'] })
export class SsoMfaChallenge {
  [OptionalProps]?: 'id' | 'createdAt' | 'usedAt' | 'redirectUri' | 'sessionId' | 'failedAttempts' | 'linkSubject' | 'linkEmail';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 64, unique: true })
  challengeHash!: string;

  /** Whom the provider signed in. */
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'string', length: 32 })
  provider!: string;

  /** `login`: a session is opened once answered; `step_up`: session `sessionId` is re-authenticated. */
  @Property({ type: 'string', length: 16 })
  intent!: SsoIntent;

  @Property({ type: 'uuid', nullable: true })
  sessionId: string | null = null;

  /**
   * A first sign-in that matched the user by verified email: the provider
   * account (subject, email) is linked only once the code is right, so nothing
   * about the account changes before the second factor.
   */
  @Property({ type: 'string', length: 255, nullable: true })
  linkSubject: string | null = null;

  @Property({ type: 'string', length: 320, nullable: true })
  linkEmail: string | null = null;

  /** The allow-listed `redirect_uri` of the attempt, or null for /app. */
  @Property({ type: 'string', length: 2048, nullable: true })
  redirectUri: string | null = null;

  /** Wrong codes presented with this challenge. */
  @Property({ type: 'integer', default: 0 })
  failedAttempts: number = 0;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @Property({ type: DateTimeType, nullable: true })
  usedAt: Date | null = null;
}
