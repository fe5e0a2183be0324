import { DateTimeType, Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company } from './company.entity';
import { User } from './user.entity';

/** A company API key (`svc_…`). Only the SHA-256 of the key is stored. */
@Entity({ tableName: 'api_keys' })
@Index({ properties: ['company', 'revokedAt'] })
export class ApiKey {
  [OptionalProps]?: 'id' | 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'createdBy';

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

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();

  @Property({ type: DateTimeType, nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  revokedAt: Date | null = null;
}
