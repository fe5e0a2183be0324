import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { searchKey } from '../../search-key';

@Entity({ tableName: 'companies' })
// The list's order (company-admin.service.ts), and a name's duplicates by its key.
@Index({ properties: ['nameKey', 'name', 'id'] })
export class Company {
  [OptionalProps]?: 'id' | 'createdAt' | 'planId';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 200 })
  name!: string;

  /** `name` as search compares it (../../search-key.ts): the list's q, its order, a name's duplicates. Written on every flush that writes the company. */
  @Property({ type: 'text', default: '', hidden: true, onCreate: (company: Company) => searchKey(company.name), onUpdate: (company: Company) => searchKey(company.name) })
  nameKey?: string;

  /** The billing plan; the billing domain owns what a plan means. */
  @Property({ type: 'string', length: 64 })
  planId: string = 'starter';

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
