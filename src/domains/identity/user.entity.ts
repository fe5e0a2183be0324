import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { roles, type Role } from '../../auth/principal';
import { Company } from './company.entity';
import { searchKey } from '../../search-key';

const keyOfName = (user: User): string | null => (user.name === null ? null : searchKey(user.name));

export { roles, type Role };
export const userStatuses = ['active', 'suspended'] as const;
export type UserStatus = (typeof userStatuses)[number];

@Entity({ tableName: 'users' })
@Index({ properties: ['company', 'createdAt'] })
// The admin list by name, case-insensitively (user-admin.service.ts): the whole order, so a page needs no sort.
@Index({ properties: ['company', 'nameKey', 'name', 'id'] })
@Index({ properties: ['deletionScheduledFor'] })
export class User {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt' | 'status' | 'isSuperadmin' | 'name' | 'lastLoginAt'
    | 'mfaEnabled' | 'mfaEnabledAt' | 'mfaSecret' | 'mfaPendingSecret' | 'mfaLastStep' | 'deletionScheduledFor';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** Stored lower-cased; unique across the instance so login needs no company. */
  @Property({ type: 'string', length: 320, unique: true })
  email!: string;

  @Property({ type: 'string', length: 200, nullable: true })
  name: string | null = null;

  /**
   * `email` and `name` as search compares them (../../search-key.ts), which
   * the admin list's q searches and its name sort orders by. Written on
   * every flush that writes the user; a nativeUpdate of `email` or `name`
   * must set them itself (it runs no onUpdate).
   */
  @Property({ type: 'text', default: '', hidden: true, onCreate: (user: User) => searchKey(user.email), onUpdate: (user: User) => searchKey(user.email) })
  emailKey?: string;

  @Property({ type: 'text', nullable: true, hidden: true, onCreate: keyOfName, onUpdate: keyOfName })
  nameKey?: string | null;

  @Property({ type: 'string', length: 255, hidden: true })
  passwordHash!: string;

  @Property({ type: 'string', length: 16 })
  role!: Role;

  @Property({ type: 'string', length: 16 })
  status: UserStatus = 'active';

  /** Platform operator: may act across companies. */
  @Property({ type: 'boolean' })
  isSuperadmin: boolean = false;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, onUpdate: () => new Date() })
  updatedAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  lastLoginAt: Date | null = null;

  /** TOTP second factor (mfa.service.ts): on only once a code confirmed the secret. */
  @Property({ type: 'boolean' })
  mfaEnabled: boolean = false;

  @Property({ type: DateTimeType, nullable: true })
  mfaEnabledAt: Date | null = null;

  /** The TOTP secret, sealed by the secret box (AES-256-GCM, context `mfa:<user id>`). */
  @Property({ type: 'string', length: 512, nullable: true, hidden: true })
  mfaSecret: string | null = null;

  /** A secret from MFA setup awaiting its first code, sealed like mfaSecret. */
  @Property({ type: 'string', length: 512, nullable: true, hidden: true })
  mfaPendingSecret: string | null = null;

  /** The last TOTP time step accepted; advanced by a conditional UPDATE, so a code works once. */
  @Property({ type: 'integer' })
  mfaLastStep: number = 0;

  /** When a requested account deletion runs (account-deletion.service.ts); null when none is scheduled. */
  @Property({ type: DateTimeType, nullable: true })
  deletionScheduledFor: Date | null = null;
}
