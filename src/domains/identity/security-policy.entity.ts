import { DateTimeType, Entity, ManyToOne, OptionalProps, Property } from '@mikro-orm/core';
import { Company } from './company.entity';

/**
 * A company's security policy. A company without a row has the defaults
 * (see `defaultPolicy` in security-policy.service.ts); the row is created on
 * the first update.
 */
@Entity({ tableName: 'security_policies' })
export class SecurityPolicy {
  [OptionalProps]?:
    | 'mfaRequired'
    | 'minPasswordLength'
    | 'sessionIdleTimeoutMinutes'
    | 'allowedSsoProviders'
    | 'ssoSignupEmailDomains'
    | 'ipAllowlist'
    | 'apiKeyMaxAgeDays'
    | 'version'
    | 'updatedAt'
    | 'updatedBy';

  @ManyToOne(() => Company, { primary: true, deleteRule: 'cascade' })
  company!: Company;

  @Property({ type: 'boolean' })
  mfaRequired: boolean = false;

  @Property({ type: 'integer' })
  minPasswordLength: number = 12;

  /** Null: sessions never end for idleness (only by expiry or revocation). */
  @Property({ type: 'integer', nullable: true })
  sessionIdleTimeoutMinutes: number | null = null;

  @Property({ type: 'json' })
  allowedSsoProviders: string[] = ['google', 'microsoft'];

  /** Email domains allowed to sign up by SSO through an invitation; empty: any. */
  @Property({ type: 'json' })
  ssoSignupEmailDomains: string[] = [];

  /** CIDRs (IPv4 and IPv6) requests of the company's users and keys must come from; empty: any. */
  @Property({ type: 'json' })
  ipAllowlist: string[] = [];

  @Property({ type: 'integer', nullable: true })
  apiKeyMaxAgeDays: number | null = null;

  /** Bumped on every change; caches compare it. */
  @Property({ type: 'integer' })
  version: number = 0;

  @Property({ type: DateTimeType })
  updatedAt: Date = new Date();

  /** Id of the user or API key that made the last change. */
  @Property({ type: 'string', length: 64, nullable: true })
  updatedBy: string | null = null;
}
