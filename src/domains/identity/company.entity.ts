import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

@Entity({ tableName: 'companies' })
export class Company {
  [OptionalProps]?: 'id' | 'createdAt' | 'planId';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 200 })
  name!: string;

  /** The billing plan; the billing domain owns what a plan means. */
  @Property({ type: 'string', length: 64 })
  planId: string = 'starter';

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
