import { Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/** A subscription plan of the seeded catalog (data/plans.json). */
@Entity({ tableName: 'plans' })
export class Plan {
  [OptionalProps]?: 'dailyRequests';

  @PrimaryKey({ type: 'string', length: 64 })
  id!: string;

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'integer' })
  monthlyCredits!: number;

  /** Requests a day on the AI modules API per account (reset at midnight UTC). */
  @Property({ type: 'integer' })
  dailyRequests: number = 0;
}
