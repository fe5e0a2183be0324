import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company } from './company.entity';
import { User, type Role } from './user.entity';

export const invitationStatuses = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof invitationStatuses)[number];

/**
 * An invitation to join a company with a role. The administration endpoints
 * create, list, resend and revoke them; single sign-on accepts one: a first
 * SSO sign-in whose verified email has a pending, unexpired invitation creates
 * the user in that company with that role. Only the SHA-256 of the emailed
 * token is stored. `expired` may be set by a sweep; a `pending` row past
 * `expiresAt` is treated as expired all the same.
 */
@Entity({ tableName: 'invitations' })
@Index({ properties: ['email', 'status'] })
@Index({ properties: ['company', 'status', 'createdAt'] })
// At most one pending invitation per company and address. The index is partial
// (`where status = 'pending'`, see its migration); MikroORM models no predicate,
// and its comparison of SQLite indexes reads only the name and columns.
@Unique({ name: 'invitations_pending_unique', properties: ['company', 'email'] })
export class Invitation {
  [OptionalProps]?: 'id' | 'createdAt' | 'status' | 'invitedBy' | 'acceptedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** Stored lower-cased, like users.email. */
  @Property({ type: 'string', length: 320 })
  email!: string;

  @Property({ type: 'string', length: 16 })
  role!: Role;

  @Property({ type: 'string', length: 64, unique: true })
  tokenHash!: string;

  @Property({ type: 'string', length: 16 })
  status: InvitationStatus = 'pending';

  @Property({ type: DateTimeType })
  expiresAt!: Date;

  @ManyToOne(() => User, { nullable: true, deleteRule: 'set null' })
  invitedBy: User | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  acceptedAt: Date | null = null;
}
