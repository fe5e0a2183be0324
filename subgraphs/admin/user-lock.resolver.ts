import { Arg, Ctx, Field, ID, Int, Mutation, ObjectType, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import type { GraphQLContext } from '../context';
import type { IdentityApi, LoginThrottleService } from '../../src/domains/identity';

@ObjectType('UserUnlock', { description: "The outcome of clearing a user's failed-login count" })
export class UserUnlockType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  userId!: string;

  @Field({ description: 'Whether sign-in was locked or delayed at the time' })
  wasLocked!: boolean;

  @Field(() => Int, { description: 'Consecutive failed logins that were cleared' })
  failures!: number;
}

@Resolver()
export class UserLockResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new UserLockResolver(identity.throttle);

  constructor(private readonly throttle: LoginThrottleService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => UserUnlockType, {
    description:
      "Ends a user's sign-in lock (or delay) after failed logins by clearing the count. Owners and admins of the " +
      "user's company, its API keys and superadmins; a user of another company is not_found.",
  })
  unlockUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.throttle.unlockUser(ctx.principal, userId, ctx.meta);
  }
}
