import { Arg, Ctx, Field, InputType, Mutation, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import type { GraphQLContext } from '../context';
import type { IdentityApi, ProfileService } from '../../src/domains/identity';
import { UserType } from './types';

@InputType('UpdateProfileInput')
export class UpdateProfileInput {
  @Field(() => String, {
    nullable: true,
    description: 'Display name, 1 to 200 characters once trimmed, without control or bidirectional formatting characters; null clears it; omitted leaves it unchanged',
  })
  name?: string | null;
}

@Resolver()
export class ProfileResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new ProfileResolver(identity.profiles);

  constructor(private readonly profiles: ProfileService) {}

  @Access({ auth: 'authenticated', duringMfaEnrollment: true })
  @Mutation(() => UserType, { description: "Updates the signed-in caller's own profile; a company API key has none (forbidden)" })
  updateMyProfile(@Arg('input', () => UpdateProfileInput) input: UpdateProfileInput, @Ctx() ctx: GraphQLContext) {
    return this.profiles.update(ctx.principal, { name: input.name }, ctx.meta);
  }
}
