import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company } from './company.entity';
import { User } from './user.entity';

/**
 * An API key; only the SHA-256 of the key is stored. A company key (`svc_…`,
 * no `user`) acts as an admin of its company on the platform API. A user's
 * AI-modules key (`sk_live_svc_…`, with `user` and `scopes`) acts as that
 * user on the AI modules API only.
 */
@Entity({ tableName: 'api_keys' })
@Index({ properties: ['company', 'revokedAt'] })
@Index({ properties: ['user', 'revokedAt'] })
export class ApiKey {
  [OptionalProps]?: 'id' | 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'createdBy' | 'user' | 'scopes';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  @Property({ type: 'string', length: 200 })
  name!: string;

  /** The first characters of the key, shown in lists so people can tell keys apart. */
  @Property({ type: 'string', length: 32 })
  prefix!: string;

  @Property({ type: 'string', length: 64, unique: true })
  keyHash!: string;

  @ManyToOne(() => User, { nullable: true, deleteRule: 'set null' })
  createdBy: User | null = null;

  /** The account an AI-modules key belongs to; null for a company key. The key goes with its user. */
  @ManyToOne(() => User, { nullable: true, deleteRule: 'cascade' })
  user: User | null = null;

  /** An AI-modules key's scopes, comma-separated; null for a company key. */
  @Property({ type: 'string', length: 100, nullable: true })
  scopes: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt: Date | null = null;
}
