import { Field, ID, Int, ObjectType } from 'type-graphql';

/**
 * What every view of a catalog model shows: the modules subgraph's `Model`
 * (what callers may use) and the admin subgraph's `AdminModel` (the whole
 * catalog) both extend it, so the fields are declared once.
 */
// Not a type of its own: the schema emits only the types its fields return.
@ObjectType()
export abstract class ModelFields {
  @Field(() => ID)
  id!: string;

  @Field()
  displayName!: string;

  @Field()
  provider!: string;

  @Field()
  family!: string;

  @Field(() => Int, { description: 'Credits per 1,000 tokens' })
  creditCost!: number;

  @Field(() => Int, { description: 'Context window in tokens' })
  contextLength!: number;
}
