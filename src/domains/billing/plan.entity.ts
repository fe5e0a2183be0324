import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/** A subscription plan of the seeded catalog (data/plans.json). */
@Entity({ tableName: 'plans' })
export class Plan {
  @PrimaryKey({ type: 'string', length: 64 })
  id!: string;

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'integer' })
  monthlyCredits!: number;
}
