import { DateTimeType, Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/** An AI model of the catalog; blocked models are hidden and refused. */
@Entity({ tableName: 'models' })
export class Model {
  [OptionalProps]?: 'blocked' | 'createdAt' | 'priceMicrosPer1kTokens' | 'familyDefault';

  @PrimaryKey({ type: 'string', length: 100 })
  id!: string;

  @Property({ type: 'string', length: 200 })
  displayName!: string;

  @Property({ type: 'string', length: 64 })
  provider!: string;

  @Property({ type: 'string', length: 64 })
  family!: string;

  @Property({ type: 'boolean' })
  blocked: boolean = false;

  /** Credits charged per 1,000 tokens. */
  @Property({ type: 'integer' })
  creditCost!: number;

  @Property({ type: 'integer' })
  contextLength!: number;

  /** The provider's price per 1,000 tokens, in micro-units of BILLING_CURRENCY: the currency cost of usage. */
  @Property({ type: 'integer' })
  priceMicrosPer1kTokens: number = 0;

  /** The model a request naming only the family (`gpt`, `claude`, …) runs on. */
  @Property({ type: 'boolean' })
  familyDefault: boolean = false;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}
