import { Field, ID, Int, ObjectType } from 'type-graphql';

@ObjectType('Plan', { description: 'A subscription plan' })
export class PlanType {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => Int, { description: 'Credits allocated at the start of each period (the 1st of the month on-premise)' })
  monthlyCredits!: number;

  @Field(() => Int, { description: 'Requests a day per account on the AI modules API, reset at midnight UTC' })
  dailyRequests!: number;
}
